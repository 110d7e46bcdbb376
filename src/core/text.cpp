#include "epochcast/core/text.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace epochcast::text {

namespace {

// The text after an optional leading '+', which std::from_chars does not take.
std::string_view unsigned_part(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  return s;
}

}  // namespace

bool parse_decimal(std::string_view s, double& out) {
  const std::string_view t = unsigned_part(s);
  if (t.empty()) return false;
  const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
  return ec == std::errc{} && p == t.data() + t.size();
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
