#include "epochcast/core/text.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace epochcast::text {

namespace {

// The text after an optional leading '+', which std::from_chars does not take.
std::string_view unsigned_part(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  return s;
}

}  // namespace

namespace {

// Powers of ten a double holds exactly (10^22 is the last).
constexpr double kExactPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                  1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
// Digits whose integer is surely below 2^53, so it is an exact double.
constexpr int kFastPathDigits = 15;

// "[-]digits[.digits]" not followed by an exponent, at most kFastPathDigits digits: the value
// as the exact integer over an exact power of ten; one IEEE division rounds correctly, so the
// result is the correctly rounded value, as from_chars gives. nullptr: not this shape.
const char* plain_decimal(const char* p, const char* end, double& out) {
  const bool negative = p < end && *p == '-';
  if (negative) ++p;
  std::uint64_t m = 0;
  int digits = 0, frac = 0;
  const char* const start = p;
  while (p < end && static_cast<unsigned>(*p - '0') < 10) m = m * 10 + static_cast<unsigned>(*p++ - '0'), ++digits;
  if (p < end && *p == '.') {
    ++p;
    while (p < end && static_cast<unsigned>(*p - '0') < 10)
      m = m * 10 + static_cast<unsigned>(*p++ - '0'), ++digits, ++frac;
  }
  if (digits == 0 || digits > kFastPathDigits || p == start) return nullptr;
  if (p < end && (*p == 'e' || *p == 'E')) return nullptr;  // an exponent: from_chars decides
  const double v = static_cast<double>(m) / kExactPow10[frac];
  out = negative ? -v : v;
  return p;
}

}  // namespace

const char* parse_decimal_prefix(std::string_view s, double& out) {
  const std::string_view t = unsigned_part(s);
  if (t.empty()) return nullptr;
  const char* const end = t.data() + t.size();
  if (const char* p = plain_decimal(t.data(), end, out)) return p;
  const auto [p, ec] = std::from_chars(t.data(), end, out);
  return ec == std::errc{} ? p : nullptr;
}

bool parse_decimal(std::string_view s, double& out) {
  double v = 0;
  const char* p = parse_decimal_prefix(s, v);
  if (p != s.data() + s.size()) return false;
  out = v;
  return true;
}

bool CsvSplitter::split(std::string_view line, bool quotes) {
  open_quote_column_ = 0;
  // Cells are written in place over the last line's (no push_back per cell: this runs for every
  // cell of every trace row); `done` cuts the vector to this line's count.
  std::size_t k = 0;
  auto put = [&](std::string_view text, std::uint32_t col, bool quoted) __attribute__((always_inline)) {
    if (k < cells_.size()) [[likely]]
      cells_[k] = CsvCell{text, col, quoted};
    else
      cells_.push_back(CsvCell{text, col, quoted});
    ++k;
  };
  auto done = [&](bool closed) {
    cells_.resize(k);
    return closed;
  };
  const char* const b = line.data();
  const std::size_t n = line.size();
  auto column = [](std::size_t at) { return static_cast<std::uint32_t>(at + 1); };
  if (!quotes || line.find('"') == std::string_view::npos) {
    // Cells are short: a plain loop beats a memchr call per cell.
    for (std::size_t pos = 0;;) {
      std::size_t comma = pos;
      while (comma < n && b[comma] != ',') ++comma;
      put(line.substr(pos, comma - pos), column(pos), false);
      if (comma == n) return done(true);
      pos = comma + 1;
    }
  }
  // Unescaped cells never outgrow the line: one reserve keeps every view into the buffer valid.
  unescaped_.clear();
  unescaped_.reserve(n);
  for (std::size_t pos = 0;;) {
    std::size_t p = pos;
    while (p < n && (b[p] == ' ' || b[p] == '\t')) ++p;
    if (p == n || b[p] != '"') {
      std::size_t comma = pos;
      while (comma < n && b[comma] != ',') ++comma;
      put(line.substr(pos, comma - pos), column(pos), false);
      if (comma == n) return done(true);
      pos = comma + 1;
      continue;
    }
    const std::size_t start = unescaped_.size();
    std::size_t i = p + 1;
    bool closed = false;
    while (i < n) {
      if (b[i] == '"') {
        if (i + 1 < n && b[i + 1] == '"') {
          unescaped_ += '"';
          i += 2;
          continue;
        }
        ++i;
        closed = true;
        break;
      }
      unescaped_ += b[i++];
    }
    if (!closed) {
      put(std::string_view(unescaped_).substr(start), column(p), true);
      open_quote_column_ = column(p);
      return done(false);
    }
    while (i < n && b[i] != ',') unescaped_ += b[i++];  // after the closing quote: kept
    put(std::string_view(unescaped_).substr(start), column(p), true);
    if (i == n) return done(true);
    pos = i + 1;
  }
}

std::optional<std::string> out_of_range_reason(std::string_view s) {
  const std::string_view t = unsigned_part(s);
  double v = 0;
  if (t.empty() || std::from_chars(t.data(), t.data() + t.size(), v).ec != std::errc::result_out_of_range)
    return std::nullopt;
  // from_chars says out of range for both ends; strtod (only on this error path) tells which:
  // ±HUGE_VAL for overflow, 0 or a subnormal for underflow.
  const std::string copy(s);
  if (std::isfinite(std::strtod(copy.c_str(), nullptr)))
    return fmt::format("out of range of a double: '{}' (nonzero, below 4.9e-324 in magnitude; write 0)", printable(s));
  return fmt::format("out of range of a double: '{}' (beyond ±1.8e308)", printable(s));
}

std::string printable(std::string_view s, std::size_t max) {
  std::string out;
  for (char c : s.substr(0, max)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) out += fmt::format("\\x{:02x}", u);
    else out += c;
  }
  if (s.size() > max) out += "…";
  return out;
}

}  // namespace epochcast::text
