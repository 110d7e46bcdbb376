// The one exception type of the library: a code plus, for parse errors, where it happened.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace epochcast {

enum class ErrorCode : std::uint8_t {
  kInvalidArgument,  // a bad option or combination of options
  kIo,               // a file or socket could not be opened, read or written
  kParse,            // an input file is malformed (file:line:column and field set)
  kUnsupported,      // a format or metric we do not handle
  kNotFound,         // a named thing (GPU, channel, file) does not exist
  kSchemaMismatch,   // a model file that does not match the running feature schema
  kDevice,           // NVML / driver failure
  kRemote,           // a server (Prometheus) answered with an error or garbage
  kInternal,         // a bug: an invariant did not hold
};

[[nodiscard]] const char* to_string(ErrorCode code);
// Process exit status the CLI uses for each code (documented in docs/errors.md).
[[nodiscard]] int exit_status(ErrorCode code);

// Where in an input a parse error happened; line and column are 1-based, 0 = unknown.
struct SourceLocation {
  std::string file;
  std::uint64_t line = 0;
  std::uint32_t column = 0;
  std::string field;  // column name in the input, e.g. "power.draw [W]"
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  Error(ErrorCode code, const std::string& message, SourceLocation where);

  [[nodiscard]] ErrorCode code() const { return code_; }
  [[nodiscard]] const SourceLocation& where() const { return where_; }
  // The message without the location prefix.
  [[nodiscard]] const std::string& detail() const { return detail_; }

 private:
  ErrorCode code_;
  SourceLocation where_;
  std::string detail_;
};

}  // namespace epochcast
