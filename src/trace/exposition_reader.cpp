// Prometheus text exposition format (https://prometheus.io/docs/instrumenting/exposition_formats/)
// as dcgm-exporter serves it on :9400/metrics and `curl -s …/metrics >> scrapes.txt` saves it:
// "# HELP"/"# TYPE" lines, then samples `NAME{label="v",…} VALUE [TIMESTAMP_MS]`. Labels gpu,
// UUID and modelName name the GPU. Several scrapes may be appended; a scrape ends where a
// (GPU, metric) pair comes again or at a line holding only a timestamp (`date +%s.%N`, `date -Is`
// written before each curl), which times the scrape. dcgm-exporter writes no sample timestamps:
// without timestamp lines the scrapes are placed --interval apart (else assumed, see TimeAxis).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trace_parser.hpp"

namespace epochcast {

using detail::kNaN;
using detail::printable;
using detail::starts_with_ci;
using detail::trim;

namespace {

// A label value with its escapes (\\, \", \n) undone; `p` after the closing quote.
bool label_value(std::string_view s, std::size_t& p, std::string& out) {
  out.clear();
  if (p >= s.size() || s[p] != '"') return false;
  ++p;
  while (p < s.size()) {
    const char c = s[p++];
    if (c == '"') return true;
    if (c == '\\' && p < s.size()) {
      const char e = s[p++];
      out += e == 'n' ? '\n' : e;
    } else {
      out += c;
    }
  }
  return false;
}

bool exposition_number(std::string_view t, double& v) {
  if (t == "NaN") {
    v = kNaN;
    return true;
  }
  if (t == "+Inf" || t == "-Inf" || t == "Inf") {
    v = kNaN;  // not a reading
    return true;
  }
  return detail::parse_double(t, v);
}

}  // namespace

void TraceParser::exposition_flush_scrape() {
  if (exposition_seen_.empty()) return;
  ++exposition_scrapes_;
  exposition_seen_.clear();
  exposition_stamp_set_ = false;
}

void TraceParser::exposition_line(std::string_view text) {
  const std::string_view t = trim(text);
  if (t.empty()) return;
  if (t[0] == '#') return;  // # HELP, # TYPE, comments
  if (detail::is_bare_timestamp(t)) {
    exposition_flush_scrape();
    exposition_stamp_ = parse_stamp(t, "(scrape time)", text);
    exposition_stamp_text_ = std::string(t);
    exposition_stamp_set_ = true;
    if (exposition_scrapes_ > 0 && !have_timestamps_)
      fail(1, "(scrape time)", "a timestamp line after scrapes that had none: every scrape needs one, or none does");
    have_timestamps_ = true;
    stamped_scrapes_ = true;
    return;
  }
  // NAME{labels} VALUE [TIMESTAMP]
  std::size_t p = 0;
  while (p < t.size() && t[p] != '{' && !detail::is_space(t[p])) ++p;
  const std::string_view name = t.substr(0, p);
  if (name.empty() || !((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z') || name[0] == '_' || name[0] == ':'))
    fail_at(text, t, "(metric)", fmt::format("not a Prometheus sample line: '{}'", printable(t)));
  int gpu = -1;
  std::string model, uuid;
  if (p < t.size() && t[p] == '{') {
    ++p;
    std::string value;
    while (true) {
      while (p < t.size() && (t[p] == ' ' || t[p] == ',')) ++p;
      if (p < t.size() && t[p] == '}') {
        ++p;
        break;
      }
      std::size_t k = p;
      while (k < t.size() && t[k] != '=' && t[k] != '}' && t[k] != ',') ++k;
      if (k >= t.size() || t[k] != '=')
        fail_at(text, t.substr(p), std::string(name), "a label without '=\"value\"' (line cut short?)");
      const std::string_view key = trim(t.substr(p, k - p));
      p = k + 1;
      if (!label_value(t, p, value))
        fail_at(text, t.substr(std::min(p, t.size())), std::string(name), "a label value without its closing quote (line cut short?)");
      if (key == "gpu") {
        if (!detail::parse_int(value, gpu) || gpu < 0)
          fail_at(text, t.substr(k + 1), std::string(name), fmt::format("label gpu is not a GPU index: '{}'", printable(value)));
      } else if (key == "UUID" || key == "uuid") {
        uuid = value;
      } else if (key == "modelName") {
        model = value;
      }
    }
  }
  while (p < t.size() && detail::is_space(t[p])) ++p;
  std::size_t e = p;
  while (e < t.size() && !detail::is_space(t[e])) ++e;
  const std::string_view value_text = t.substr(p, e - p);
  if (value_text.empty()) fail_at(text, t.substr(p), std::string(name), "a sample without a value (line cut short?)");
  double v = 0;
  if (!exposition_number(value_text, v))
    fail_at(text, value_text, std::string(name),
            detail::bad_number(value_text) + " (a Prometheus sample is NAME{labels} VALUE [TIMESTAMP_MS])");
  std::string_view stamp_text = trim(t.substr(e));
  const auto metric = metric_by_dcgm_name(name);
  if (!metric) {
    if (std::find(ignored_names_.begin(), ignored_names_.end(), name) == ignored_names_.end() && ignored_names_.size() < 1000)
      ignored_names_.emplace_back(name);
    return;
  }
  const int slot = pivot_slot(*metric, name);
  if (slot < 0) return;
  pivot_identity(gpu, model, uuid);
  // A (GPU, metric) pair seen again: the next scrape has begun.
  auto seen = std::find_if(exposition_seen_.begin(), exposition_seen_.end(), [&](const auto& s) { return s.first == gpu; });
  const std::uint64_t bit = std::uint64_t{1} << static_cast<unsigned>(slot);
  if (seen != exposition_seen_.end() && (seen->second & bit)) {
    if (stamped_scrapes_)
      fail_at(text, t, std::string(name), "a scrape without its timestamp line: every scrape needs one, or none does");
    exposition_flush_scrape();
    seen = exposition_seen_.end();
  }
  if (seen == exposition_seen_.end()) {
    exposition_seen_.emplace_back(gpu, 0);
    seen = exposition_seen_.end() - 1;
  }
  seen->second |= bit;
  double stamp = 0;
  if (!stamp_text.empty()) {
    // The format's own sample timestamp: integer milliseconds since the epoch.
    double ms = 0;
    if (!detail::parse_double(stamp_text, ms) || !(ms >= 0 && ms < 1e14))
      fail_at(text, stamp_text, std::string(name), fmt::format("not a sample timestamp (ms): '{}'", printable(stamp_text)));
    stamp = unix_stamp(ms / 1000.0);
    have_timestamps_ = true;
  } else if (exposition_stamp_set_) {
    stamp = exposition_stamp_;
  } else {
    if (stamped_scrapes_) fail_at(text, t, std::string(name), "a scrape without its timestamp line");
    have_timestamps_ = false;
    stamp = static_cast<double>(exposition_scrapes_) * no_timestamp_interval_s();
  }
  pivot_add(gpu, std::llround(stamp * 1e6), slot, v);
}

}  // namespace epochcast
