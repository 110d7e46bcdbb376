#include "epochcast/core/error.hpp"

namespace epochcast {

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kParse: return "parse";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kSchemaMismatch: return "schema_mismatch";
    case ErrorCode::kDevice: return "device";
    case ErrorCode::kRemote: return "remote";
    case ErrorCode::kInternal: return "internal";
  }
  return "unknown";
}

int exit_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return 2;
    case ErrorCode::kIo: return 3;
    case ErrorCode::kParse: return 4;
    case ErrorCode::kUnsupported: return 5;
    case ErrorCode::kNotFound: return 6;
    case ErrorCode::kSchemaMismatch: return 7;
    case ErrorCode::kDevice: return 8;
    case ErrorCode::kRemote: return 9;
    case ErrorCode::kInternal: return 70;
  }
  return 1;
}

namespace {
std::string with_location(const std::string& message, const SourceLocation& where) {
  if (where.file.empty()) return message;
  std::string out = where.file;
  if (where.line > 0) out += ":" + std::to_string(where.line);
  if (where.column > 0) out += ":" + std::to_string(where.column);
  out += ": ";
  if (!where.field.empty()) out += "field '" + where.field + "': ";
  return out + message;
}
}  // namespace

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(message), code_(code), detail_(message) {}

Error::Error(ErrorCode code, const std::string& message, SourceLocation where)
    : std::runtime_error(with_location(message, where)),
      code_(code),
      where_(std::move(where)),
      detail_(message) {}

}  // namespace epochcast
