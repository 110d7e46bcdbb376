#include "epochcast/core/error.hpp"

#include <algorithm>

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

constexpr std::size_t kMaxMessageBytes = 2048;

// Messages quote untrusted input: keep them one line without terminal control bytes, and
// bounded (a 20 KB cell echoed whole is no clearer). Cut on a UTF-8 character boundary.
std::string one_line(const std::string& s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(std::min(s.size(), kMaxMessageBytes) + 16);
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (out.size() >= kMaxMessageBytes) {
      if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) {  // inside a character: drop its start
        while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
        if (!out.empty()) out.pop_back();
      }
      return out + "… (cut; " + std::to_string(s.size()) + " bytes in all)";
    }
    const auto u = static_cast<unsigned char>(s[i]);
    if ((u < 0x20 && u != '\t') || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += s[i];
    }
  }
  return out;
}

SourceLocation clean(SourceLocation where) {
  where.field = one_line(where.field);
  // The file name too: `info $'a\e[31m.csv'` wrote the escape sequence to the terminal.
  where.file = one_line(where.file);
  return where;
}

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
    : std::runtime_error(one_line(message)), code_(code), detail_(one_line(message)) {}

Error::Error(ErrorCode code, const std::string& message, SourceLocation where)
    : std::runtime_error(with_location(one_line(message), clean(where))),
      code_(code),
      where_(clean(std::move(where))),
      detail_(one_line(message)) {}

}  // namespace epochcast
