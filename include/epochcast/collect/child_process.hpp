// The training command of `collect -- COMMAND`: started with our environment, watched without
// blocking while the sampler runs, its exit status in the shell's convention.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace epochcast {

class ChildProcess {
 public:
  // posix_spawnp (PATH lookup). Error(kInvalidArgument) for an empty command, Error(kIo)
  // "cannot start 'ARG0': why" when it cannot be started.
  explicit ChildProcess(const std::vector<std::string>& args);
  // Neither kills nor waits: a child still running when we return is left to finish.
  ~ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }
  // The exit status once it has ended (128 + signal number when killed); nullopt while running.
  std::optional<int> poll();
  // Blocks until it has ended; the status as poll() gives it.
  int wait();
  // Sends a signal unless it has already been reaped (never a recycled pid).
  void signal(int sig) const;

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// Runs a command to its end: its exit status (128 + signal when killed). Error(kIo) if it
// cannot be started.
int run_to_end(const std::vector<std::string>& args);

}  // namespace epochcast
