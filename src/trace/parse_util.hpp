// Small, allocation-free parsing helpers shared by the trace readers.
#pragma once

#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "epochcast/core/text.hpp"

namespace epochcast::detail {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A value quoted in a message: control bytes escaped, cut after `max` bytes.
using text::printable;

// Names listed in a warning: the first `max_items`, each printable(), then "… (N in all)".
// A header of 100,000 unknown columns made one 789 KB warning line.
std::string name_list(const std::vector<std::string>& names, std::size_t max_items = 20);

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

inline std::string_view trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

inline bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    char a = s[i], b = prefix[i];
    if (a >= 'A' && a <= 'Z') a = static_cast<char>(a - 'A' + 'a');
    if (b >= 'A' && b <= 'Z') b = static_cast<char>(b - 'A' + 'a');
    if (a != b) return false;
  }
  return true;
}

inline bool equals_ci(std::string_view a, std::string_view b) {
  return a.size() == b.size() && starts_with_ci(a, b);
}

// Parses a whole decimal number (std::from_chars); false if anything is left over.
inline bool parse_double(std::string_view s, double& out) { return text::parse_decimal(s, out); }

// Why `s` is not a number, for an error message: "out of range of a double: '1e309' (beyond
// ±1.8e308)" when it starts with a well-formed decimal number a double cannot hold (overflow, or
// a nonzero value below 4.9e-324), else "not a number: 's'". `s` is quoted with printable().
std::string bad_number(std::string_view s);
// True when `s` starts with a decimal number (a '+' allowed) that a double cannot hold.
bool out_of_double_range(std::string_view s);

// Parses a leading number (text::parse_decimal_prefix); the rest (unparsed) through `rest`.
inline bool parse_leading_double(std::string_view s, double& out, std::string_view& rest) {
  const char* p = text::parse_decimal_prefix(s, out);
  if (p == nullptr) return false;
  rest = s.substr(static_cast<std::size_t>(p - s.data()));
  return true;
}

inline bool parse_int(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size();
}

// Where a timestamp's seconds are anchored.
enum class TimeKind : std::uint8_t {
  kUnix,       // absolute Unix seconds (zoned ISO-8601, or a Unix number)
  kLocal,      // a date and time without a zone, resolved with the machine's TZ rules
  kTimeOfDay,  // a time without a date: seconds since local midnight (roll-over handled later)
};

// Converts local broken-down wall time to Unix seconds with the machine's TZ rules; caches
// the offset per (date, hour) since mktime is slow and takes a lock.
class LocalTimeResolver {
 public:
  std::int64_t to_unix(int year, int month, int day, int hour, int minute, int second);

 private:
  std::int64_t cached_key_ = -1;
  std::int64_t cached_offset_s_ = 0;
};

// Parses "YYYY/MM/DD HH:MM:SS[.fff]", "YYYY-MM-DD[T ]HH:MM:SS[.fff][Z|±hh[:]mm]",
// "HH:MM:SS[.fff]" (time of day) or Unix seconds "1764516173.672".
// Whole seconds and the fraction apart, so sub-millisecond steps survive at Unix-epoch scale.
bool parse_timestamp(std::string_view s, LocalTimeResolver& local, std::int64_t& whole_s, double& frac_s,
                     TimeKind& kind);

// Factor that converts a value written in `unit` into the canonical unit `canonical`
// (metric table); nullopt when the unit is unknown or measures something else.
std::optional<double> unit_factor(std::string_view unit, std::string_view canonical);

// ---- shared by the format readers (read.cpp, *_reader.cpp)

// The words of a '#' line after the '#'.
std::vector<std::string_view> comment_words(std::string_view line);
// nvidia-smi monitor headers: 1 for dmon ("# gpu pwr …", "#Date Time gpu …"), 2 for pmon ("# gpu pid …"), else 0.
int smi_monitor_header(std::string_view line);
// Lines that cannot decide a format: blank, an unclaimed comment, "sep=,", a bare timestamp.
bool is_preamble(std::string_view trimmed);
// A line holding nothing but a timestamp (as `date +%s.%N` or `date -Is` writes between scrapes).
bool is_bare_timestamp(std::string_view trimmed);
// RFC 4180 cells: quoted cells may hold commas and "" for a quote; cells trimmed.
void split_csv_cells(std::string_view line, std::vector<std::string>& out);
// "system.gpu.3.powerWatts" (W&B; also "system/gpu.3.…" and "<run> - system/gpu.3.…") -> (3, "powerWatts").
std::optional<std::pair<int, std::string_view>> wandb_gpu_column(std::string_view name);
// "system/gpu_0_utilization_percentage" (MLflow) -> (0, "utilization_percentage").
std::optional<std::pair<int, std::string_view>> mlflow_gpu_key(std::string_view key);

}  // namespace epochcast::detail
