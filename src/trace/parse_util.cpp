#include "parse_util.hpp"

#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

namespace epochcast::detail {
namespace {

bool digits(std::string_view s, std::size_t pos, std::size_t n, int& out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    const char c = s[i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

// "HH:MM:SS[.fff]" at s[pos..]; returns the position after it, or npos.
std::size_t parse_clock(std::string_view s, std::size_t pos, int& h, int& m, int& sec, double& frac) {
  if (!digits(s, pos, 2, h) || pos + 2 >= s.size() || s[pos + 2] != ':' ||
      !digits(s, pos + 3, 2, m) || pos + 5 >= s.size() || s[pos + 5] != ':' ||
      !digits(s, pos + 6, 2, sec))
    return std::string_view::npos;
  if (h > 23 || m > 59 || sec > 60) return std::string_view::npos;
  std::size_t p = pos + 8;
  frac = 0;
  if (p < s.size() && (s[p] == '.' || s[p] == ',')) {
    ++p;
    const std::size_t start = p;
    std::int64_t num = 0, den = 1;
    while (p < s.size() && s[p] >= '0' && s[p] <= '9') {
      if (den < 1000000000) {
        num = num * 10 + (s[p] - '0');
        den *= 10;
      }
      ++p;
    }
    if (p == start) return std::string_view::npos;
    frac = static_cast<double>(num) / static_cast<double>(den);
  }
  return p;
}

}  // namespace

bool out_of_double_range(std::string_view s) { return text::out_of_range_reason(s).has_value(); }

std::string bad_number(std::string_view s) {
  return text::out_of_range_reason(s).value_or(fmt::format("not a number: '{}'", printable(s)));
}

std::string name_list(const std::vector<std::string>& names, std::size_t max_items) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < max_items; ++i) {
    if (i) out += ", ";
    out += printable(names[i]);
  }
  if (names.size() > max_items) out += fmt::format(", … ({} in all)", names.size());
  return out;
}

std::int64_t LocalTimeResolver::to_unix(int year, int month, int day, int hour, int minute, int second) {
  const std::int64_t utc_days = text::days_from_civil(year, static_cast<unsigned>(month),
                                                static_cast<unsigned>(day));
  const std::int64_t key = utc_days * 24 + hour;
  if (key != cached_key_) {
    std::tm tm{};
    tm.tm_year = year - 1900;
    tm.tm_mon = month - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = 30;  // mid-hour: DST switches happen on the hour
    tm.tm_isdst = -1;
    const std::time_t local = std::mktime(&tm);
    const std::int64_t as_utc = utc_days * 86400 + hour * 3600 + 30 * 60;
    cached_offset_s_ = local == static_cast<std::time_t>(-1) ? 0 : local - as_utc;
    cached_key_ = key;
  }
  return utc_days * 86400 + hour * 3600 + minute * 60 + second + cached_offset_s_;
}

bool parse_timestamp(std::string_view s, LocalTimeResolver& local, std::int64_t& whole_s, double& frac_s,
                     TimeKind& kind) {
  int h = 0, mi = 0, sec = 0;
  double frac = 0;
  if (s.size() >= 8 && s[2] == ':') {  // time of day only
    const std::size_t end = parse_clock(s, 0, h, mi, sec, frac);
    if (end != s.size()) return false;
    whole_s = h * 3600 + mi * 60 + sec;
    frac_s = frac;
    kind = TimeKind::kTimeOfDay;
    return true;
  }
  if (s.size() >= 19 && (s[4] == '/' || s[4] == '-') && s[7] == s[4]) {
    int y = 0, mo = 0, d = 0;
    if (!digits(s, 0, 4, y) || !digits(s, 5, 2, mo) || !digits(s, 8, 2, d)) return false;
    // A real calendar day: a flipped digit (11/30 -> 11/31, 2025-02-29) must not read as the
    // next month's first day.
    if (!std::chrono::year_month_day{std::chrono::year{y}, std::chrono::month{static_cast<unsigned>(mo)},
                                     std::chrono::day{static_cast<unsigned>(d)}}
             .ok())
      return false;
    if (s[10] != ' ' && s[10] != 'T') return false;
    const std::size_t p = parse_clock(s, 11, h, mi, sec, frac);
    if (p == std::string_view::npos) return false;
    frac_s = frac;
    if (p == s.size()) {
      whole_s = local.to_unix(y, mo, d, h, mi, sec);
      kind = TimeKind::kLocal;
      return true;
    }
    std::int64_t offset_s = 0;
    if (s[p] == 'Z' && p + 1 == s.size()) {
      offset_s = 0;
    } else if (s[p] == '+' || s[p] == '-') {
      int oh = 0, om = 0;
      const std::string_view z = s.substr(p + 1);
      const bool ok = (z.size() == 5 && z[2] == ':' && digits(z, 0, 2, oh) && digits(z, 3, 2, om)) ||
                      (z.size() == 4 && digits(z, 0, 2, oh) && digits(z, 2, 2, om)) ||
                      (z.size() == 2 && digits(z, 0, 2, oh));
      if (!ok || oh > 23 || om > 59) return false;
      offset_s = (oh * 3600 + om * 60) * (s[p] == '-' ? -1 : 1);
    } else {
      return false;
    }
    const std::int64_t days = text::days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
    whole_s = days * 86400 + h * 3600 + mi * 60 + sec - offset_s;
    kind = TimeKind::kUnix;
    return true;
  }
  // Unix seconds: a plain non-negative decimal number "1764516173.672".
  if (!s.empty() && s[0] >= '0' && s[0] <= '9') {
    const std::size_t dot = s.find('.');
    const std::string_view int_part = s.substr(0, dot);
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(int_part.data(), int_part.data() + int_part.size(), v);
    if (ec != std::errc{} || p != int_part.data() + int_part.size() || v > 100000000000LL) return false;
    frac = 0;
    if (dot != std::string_view::npos) {
      std::int64_t num = 0, den = 1;
      if (dot + 1 == s.size()) return false;
      for (std::size_t i = dot + 1; i < s.size(); ++i) {
        if (s[i] < '0' || s[i] > '9') return false;
        if (den < 1000000000) {
          num = num * 10 + (s[i] - '0');
          den *= 10;
        }
      }
      frac = static_cast<double>(num) / static_cast<double>(den);
    }
    whole_s = v;
    frac_s = frac;
    kind = TimeKind::kUnix;
    return true;
  }
  return false;
}

std::optional<double> unit_factor(std::string_view unit, std::string_view canonical) {
  struct Row {
    std::string_view canonical, unit;
    double factor;
  };
  // Case matters for SI prefixes (mW vs MW); dcgmi prints MHZ, older tools "MB" for MiB.
  static constexpr std::array<Row, 30> kUnits{{
      {"%", "%", 1.0},
      {"W", "W", 1.0},       {"W", "mW", 1e-3},     {"W", "kW", 1e3},
      {"MHz", "MHz", 1.0},   {"MHz", "MHZ", 1.0},   {"MHz", "GHz", 1e3},   {"MHz", "kHz", 1e-3},
      {"MiB", "MiB", 1.0},   {"MiB", "MB", 1.0},    {"MiB", "GiB", 1024.0},
      {"MiB", "KiB", 1.0 / 1024},                   {"MiB", "B", 1.0 / 1048576},
      {"C", "C", 1.0},       {"C", "°C", 1.0},      {"C", "degC", 1.0},
      {"mJ", "mJ", 1.0},     {"mJ", "J", 1e3},      {"mJ", "kJ", 1e6},
      {"B/s", "B/s", 1.0},   {"B/s", "KB/s", 1e3},  {"B/s", "MB/s", 1e6},
      {"B/s", "KiB/s", 1024.0},                     {"B/s", "MiB/s", 1048576.0},
      {"B/s", "GB/s", 1e9},  {"ratio", "ratio", 1.0},
      {"%", "ratio", 100.0}, {"ratio", "%", 0.01},
      {"", "", 1.0},         {"C", "", 1.0},
  }};
  if (unit.empty()) return 1.0;  // nounits: values are in the source's native unit
  for (const auto& r : kUnits)
    if (r.canonical == canonical && r.unit == unit) return r.factor;
  return std::nullopt;
}

void split_csv_cells(std::string_view line, std::vector<std::string>& out) {
  text::CsvSplitter splitter;
  splitter.split(line, true);  // a quote left open: the cell holds the rest of the line
  out.clear();
  for (const text::CsvCell& c : splitter.cells()) out.emplace_back(trim(c.text));
}

namespace {

// "<digits><sep>" at s: the GPU number and the rest after the separator.
std::optional<std::pair<int, std::string_view>> gpu_number(std::string_view s, char sep) {
  std::size_t e = 0;
  while (e < s.size() && s[e] >= '0' && s[e] <= '9') ++e;
  int g = 0;
  if (e == 0 || e > 4 || e >= s.size() || s[e] != sep || !parse_int(s.substr(0, e), g)) return std::nullopt;
  return std::pair<int, std::string_view>{g, s.substr(e + 1)};
}

}  // namespace

std::optional<std::pair<int, std::string_view>> wandb_gpu_column(std::string_view name) {
  if (const std::size_t dash = name.rfind(" - "); dash != std::string_view::npos) name = name.substr(dash + 3);
  for (std::string_view prefix : {std::string_view("system.gpu."), std::string_view("system/gpu.")})
    if (name.substr(0, prefix.size()) == prefix) return gpu_number(name.substr(prefix.size()), '.');
  return std::nullopt;
}

std::optional<std::pair<int, std::string_view>> mlflow_gpu_key(std::string_view key) {
  constexpr std::string_view kPrefix = "system/gpu_";
  if (key.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  return gpu_number(key.substr(kPrefix.size()), '_');
}

}  // namespace epochcast::detail
