// Helpers for the collect/prometheus integration tests: run the built CLI (or any program)
// with extra environment variables, capture its output, signal it, and make temp dirs.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace epochcast::testing {

namespace fs = std::filesystem;

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh directory under the temp dir, removed with the object.
class TempDir {
 public:
  explicit TempDir(const std::string& name) {
    path_ = fs::temp_directory_path() / fmt_name(name);
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  [[nodiscard]] const fs::path& path() const { return path_; }
  [[nodiscard]] fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  static std::string fmt_name(const std::string& name) {
    return "epochcast-" + name + "-" + std::to_string(getpid()) + "-" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000);
  }
  fs::path path_;
};

// A TCP port on 127.0.0.1 that was free a moment ago (the kernel picks it). Racy if something
// is to listen on it later; only for "nothing listens there" checks. Servers under test bind
// port 0 themselves and say which port they got (listen_port_in).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("cannot find a free port");
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Waits until `file` (a child's stderr or log) holds `marker` followed by a port number and
// returns it; -1 after timeout_s. E.g. "http://127.0.0.1:" in `collect --listen 127.0.0.1:0`.
inline int listen_port_in(const fs::path& file, const std::string& marker, double timeout_s = 30) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string text = read_file(file);
    if (const auto at = text.find(marker); at != std::string::npos) {
      std::size_t end = at + marker.size();
      int port = 0;
      while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])))
        port = port * 10 + (text[end++] - '0');
      if (end > at + marker.size() && end < text.size()) return port;  // the whole number is there
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

using EnvVars = std::map<std::string, std::string>;

#ifdef EPOCHCAST_FAKE_NVML
// The environment that makes the CLI load the fake NVML replaying `trace`.
inline EnvVars fake_nvml_env(const std::string& trace, const std::string& speed = "1") {
  return {{"EPOCHCAST_NVML_LIBRARY", EPOCHCAST_FAKE_NVML},
          {"EPOCHCAST_FAKE_NVML_TRACE", trace},
          {"EPOCHCAST_FAKE_NVML_SPEED", speed}};
}
#endif

// A child process with stdout/stderr going to files.
class Process {
 public:
  Process(const std::vector<std::string>& args, const EnvVars& env, const fs::path& out_dir) {
    out_path_ = out_dir / ("stdout-" + std::to_string(counter()++));
    err_path_ = out_path_.string() + ".err";
    std::map<std::string, std::string> merged;
    for (char** e = environ; *e; ++e) {
      const std::string kv = *e;
      const auto eq = kv.find('=');
      if (eq != std::string::npos) merged[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& [k, v] : env) merged[k] = v;
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : merged) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp, argv;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args_copy = args;
    for (auto& a : args_copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int rc = posix_spawnp(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start " + args[0] + ": " + std::strerror(rc));
  }
  ~Process() {
    if (pid_ > 0 && status_ < 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  void signal(int sig) const { ::kill(pid_, sig); }
  // For callers that reaped the child themselves (wait4 for its rusage).
  void reaped(int status) { status_ = status; }
  [[nodiscard]] pid_t pid() const { return pid_; }
  // Exit status (128 + signal when killed); -1 and SIGKILL when it outlives the timeout.
  int wait(double timeout_s = 60) {
    if (status_ >= 0) return status_;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    int raw = 0;
    while (true) {
      const pid_t r = waitpid(pid_, &raw, WNOHANG);
      if (r == pid_) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        waitpid(pid_, &raw, 0);
        status_ = -1;
        return status_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
    return status_;
  }
  [[nodiscard]] std::string out() const { return read_file(out_path_); }
  [[nodiscard]] std::string err() const { return read_file(err_path_); }
  [[nodiscard]] const fs::path& err_path() const { return err_path_; }
  // The port a `collect --listen HOST:0` child reports it is serving on; -1 if it never says.
  [[nodiscard]] int serving_port(double timeout_s = 30) const {
    return listen_port_in(err_path_, "serving http://127.0.0.1:", timeout_s);
  }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  pid_t pid_ = -1;
  int status_ = -1;
  fs::path out_path_, err_path_;
};

struct RunResult {
  int status;
  std::string out, err;
};

#ifdef EPOCHCAST_CLI
inline RunResult run_cli(std::vector<std::string> args, const EnvVars& env, const fs::path& dir,
                         double timeout_s = 120) {
  args.insert(args.begin(), EPOCHCAST_CLI);
  Process p(args, env, dir);
  const int status = p.wait(timeout_s);
  return {status, p.out(), p.err()};
}
#endif

}  // namespace epochcast::testing
