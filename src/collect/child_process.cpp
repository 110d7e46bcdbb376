#include "epochcast/collect/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

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
  // fork + exec instead of posix_spawn, for PR_SET_PDEATHSIG: if the collector dies (kill -9,
  // OOM) the command gets SIGTERM instead of running on as an orphan nobody samples. The signal
  // follows the forking thread; this runs on the collector's main thread, which lives to the end.
  // A close-on-exec pipe carries exec's errno back, so "cannot start" is still an error here.
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) throw Error(ErrorCode::kIo, fmt::format("cannot start '{}': pipe", args[0]));
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) {
    const int err = errno;
    ::close(report[0]);
    ::close(report[1]);
    throw Error(ErrorCode::kIo, fmt::format("cannot start '{}': {}", args[0], std::strerror(err)));
  }
  if (pid_ == 0) {  // child: async-signal-safe calls only
    ::close(report[0]);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);  // the collector died before the prctl
    execvp(argv[0], argv.data());
    const int err = errno;
    static_cast<void>(!::write(report[1], &err, sizeof err));
    _exit(127);
  }
  ::close(report[1]);
  int err = 0;
  ssize_t n = 0;
  while ((n = ::read(report[0], &err, sizeof err)) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  if (n == static_cast<ssize_t>(sizeof err)) {
    int raw = 0;
    while (waitpid(pid_, &raw, 0) < 0 && errno == EINTR) {
    }
    throw Error(ErrorCode::kIo, fmt::format("cannot start '{}': {}", args[0], std::strerror(err)));
  }
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
