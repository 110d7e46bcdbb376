// Runs a shell command (the built CLI, Chromium) and captures its stdout and exit status.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace epochcast::testing {

struct CommandResult {
  int status = -1;  // exit status; -1 if it could not start or was killed by a signal
  std::string out;  // everything it wrote on stdout
};

inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) r.out.append(buf.data(), n);
  const int raw = ::pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

// `epochcast ARGS` (ARGS may end with a redirection such as "2>&1").
inline CommandResult run_cli(const std::string& args) {
  return run_command(std::string(EPOCHCAST_CLI) + " " + args);
}

}  // namespace epochcast::testing
