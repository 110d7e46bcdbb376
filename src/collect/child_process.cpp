#include "epochcast/collect/child_process.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include "epochcast/core/error.hpp"

extern char** environ;

namespace epochcast {

namespace {

int shell_status(int raw) {
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  if (WIFSIGNALED(raw)) return 128 + WTERMSIG(raw);
  return 1;
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& args) {
  if (args.empty() || args.front().empty()) throw Error(ErrorCode::kInvalidArgument, "no command to start");
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  if (const int rc = posix_spawnp(&pid_, argv[0], nullptr, nullptr, argv.data(), environ); rc != 0)
    throw Error(ErrorCode::kIo, fmt::format("cannot start '{}': {}", args[0], std::strerror(rc)));
}

std::optional<int> ChildProcess::poll() {
  if (status_) return status_;
  int raw = 0;
  pid_t r = 0;
  while ((r = waitpid(pid_, &raw, WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r == pid_) status_ = shell_status(raw);
  else if (r < 0) status_ = 1;  // ECHILD: reaped elsewhere (SIGCHLD ignored); nothing to wait for
  return status_;
}

int ChildProcess::wait() {
  if (status_) return *status_;
  int raw = 0;
  pid_t r = 0;
  while ((r = waitpid(pid_, &raw, 0)) < 0 && errno == EINTR) {
  }
  status_ = r == pid_ ? shell_status(raw) : 1;
  return *status_;
}

void ChildProcess::signal(int sig) const {
  if (!status_) ::kill(pid_, sig);
}

int run_to_end(const std::vector<std::string>& args) { return ChildProcess(args).wait(); }

}  // namespace epochcast
