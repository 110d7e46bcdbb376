// Shared by the libFuzzer targets: what counts as a finding beyond a sanitizer report.
// An epochcast::Error must name the input (file name) and, for a parse error, the line;
// kInternal is a bug; any other exception escaping the library is a bug.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>

#include "epochcast/core/error.hpp"

namespace epochcast::fuzz {

[[noreturn]] inline void finding(const char* what, const std::string& message) {
  std::fprintf(stderr, "FUZZ FINDING: %s: %s\n", what, message.c_str());
  std::abort();
}

// `needs_line`: parse errors from line-oriented inputs must carry a line number. An empty
// `name` checks only for bugs (stages after a reader need not name a file).
inline void check_error(const Error& e, const std::string& name, bool needs_line = true) {
  const std::string msg = e.what();
  if (e.code() == ErrorCode::kInternal) finding("internal error", msg);
  if (name.empty()) return;
  if (msg.find(name) == std::string::npos) finding("error does not name the file", msg);
  if (e.code() == ErrorCode::kParse && needs_line && e.where().line == 0)
    finding("parse error without a line", msg);
  if (msg.size() > 4096) finding("error message longer than 4 KiB", msg.substr(0, 300) + "...");
  for (char c : msg)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) finding("control byte in error message", msg);
}

// Runs `body`, checking any Error and turning any other exception into a finding.
template <typename F>
void run_checked(const std::string& name, bool needs_line, F&& body) {
  try {
    body();
  } catch (const Error& e) {
    check_error(e, name, needs_line);
  } catch (const std::exception& e) {
    finding("non-epochcast exception escaped", std::string(typeid(e).name()) + ": " + e.what());
  }
}

}  // namespace epochcast::fuzz
