// nvidia-smi dmon (`nvidia-smi dmon [-s pucmt] [-o DT] [-d S]`): a "# gpu pwr gtemp …" names
// line, a "# Idx W C …" units line (both printed again every screenful), then rows of
// whitespace-separated values, "-" where a field is not supported. `-o D`/`-o T` prefix the
// date (YYYYMMDD) and time (HH:MM:SS). nvidia-smi pmon looks alike and is refused with why.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trace_parser.hpp"

namespace epochcast {

using detail::equals_ci;
using detail::kNaN;
using detail::printable;
using detail::starts_with_ci;
using detail::trim;

namespace {

void split_words(std::string_view text, std::vector<std::string_view>& out) {
  out.clear();
  std::size_t p = 0;
  while (p < text.size()) {
    while (p < text.size() && detail::is_space(text[p])) ++p;
    std::size_t e = p;
    while (e < text.size() && !detail::is_space(text[e])) ++e;
    if (e > p) out.push_back(text.substr(p, e - p));
    p = e;
  }
}

}  // namespace

void TraceParser::smi_dmon_line(std::string_view text) {
  const std::string_view t = trim(text);
  if (t.empty()) return;
  if (t[0] == '#') {
    const int kind = detail::smi_monitor_header(t);
    if (kind == 2)
      fail(1, "(header)",
           "this is nvidia-smi pmon output: per-process samples (each process's share of SM and memory "
           "activity), not the whole GPU's utilisation, power or clocks. Log the GPU instead with "
           "`nvidia-smi dmon -s pucm -o DT` or `nvidia-smi --query-gpu=timestamp,index,name,utilization.gpu,"
           "utilization.memory,power.draw,clocks.sm,clocks.mem,memory.used --format=csv -lms 100`");
    if (kind == 1) {
      if (!smi_dmon_names_.empty() && t == smi_dmon_names_) {
        ++repeated_headers_;  // printed again every screenful
        pending_units_ = true;
        return;
      }
      if (header_done_)
        fail(1, "(header)",
             "a second, different nvidia-smi dmon header: logs of different -s selections are mixed");
      smi_dmon_names_ = std::string(t);
      pending_units_ = true;
      return;
    }
    if (pending_units_) {
      pending_units_ = false;
      if (!header_done_) smi_dmon_header(smi_dmon_names_, t);
      else if (t != units_text_) fail(1, "(units)", "a second, different nvidia-smi dmon units line");
      return;
    }
    if (starts_with_ci(t, "#Entity") || starts_with_ci(t, "# Entity"))
      fail(1, "(header)", "a dcgmi dmon header inside an nvidia-smi dmon log: formats are mixed");
    return;  // a user's comment
  }
  if (!header_done_) {
    if (pending_units_) fail(1, "(units)", "the nvidia-smi dmon names line is not followed by its units line ('# Idx …')");
    fail(1, "(header)", "nvidia-smi dmon rows before the '# gpu …' header");
  }
  if (pending_units_) fail(1, "(units)", "the repeated nvidia-smi dmon header lacks its units line");
  smi_dmon_row(text);
}

void TraceParser::smi_dmon_header(std::string_view names, std::string_view units) {
  units_text_ = std::string(units);
  std::vector<std::string_view> n = detail::comment_words(names), u = detail::comment_words(units);
  if (n.size() != u.size())
    fail(1, "(units)", fmt::format("the units line has {} fields for the {} names of the header", u.size(), n.size()));
  columns_.clear();
  metrics_.clear();
  busy_slot_ = -1;
  std::vector<std::string> ignored;
  bool has_index = false, has_time = false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    Column col;
    col.name = std::string(n[i]);
    if (equals_ci(n[i], "Date")) {
      col.kind = ColumnKind::kDate;
    } else if (equals_ci(n[i], "Time")) {
      col.kind = ColumnKind::kTime;
      has_time = true;
    } else if (n[i] == "gpu") {
      col.kind = ColumnKind::kIndex;
      has_index = true;
    } else if (const auto sm = metric_by_smi_dmon_name(n[i])) {
      col.kind = ColumnKind::kMetric;
      col.canonical_unit = std::string(info(sm->metric).unit);
      col.header_unit = std::string(u[i]);
      col.header_factor = sm->factor;
      col.slot = add_metric_slot(sm->metric, n[i]);
      if (col.slot < 0) col.kind = ColumnKind::kIgnored;
    } else {
      ignored.emplace_back(n[i]);
    }
    columns_.push_back(std::move(col));
  }
  if (!has_index) fail(1, "(header)", "the nvidia-smi dmon header has no 'gpu' column");
  if (!ignored.empty())
    warn_once(fmt::format("ignored nvidia-smi dmon columns epochcast has no metric for: {}", detail::name_list(ignored)));
  if (metrics_.empty()) fail(1, "(header)", "the nvidia-smi dmon header names no metric epochcast reads");
  have_timestamps_ = has_time;
  row_.assign(metrics_.size(), kNaN);
  set_column_limits();
  header_done_ = true;
}

void TraceParser::smi_dmon_row(std::string_view text) {
  split_words(text, fields_);
  check_field_count(text, 0, columns_);
  int gpu_index = -1;
  std::string_view date, clock;
  row_field_offset_ = 0;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    const Column& col = columns_[i];
    const std::string_view f = fields_[i];
    switch (col.kind) {
      case ColumnKind::kDate: date = f; break;
      case ColumnKind::kTime: clock = f; break;
      case ColumnKind::kIndex:
        if (!detail::parse_int(f, gpu_index) || gpu_index < 0)
          fail_at(text, f, col.name, fmt::format("not a GPU index: '{}'", printable(f)));
        break;
      case ColumnKind::kMetric: {
        double v = kNaN;
        if (f == "-") {
          ++missing_values_;
        } else if (!detail::parse_double(f, v) || !std::isfinite(v)) {
          fail_at(text, f, col.name, detail::bad_number(f));
        } else {
          v = converted(v, col.header_factor, col, text, f, f);
        }
        row_[static_cast<std::size_t>(col.slot)] = checked(col, v);
        break;
      }
      default: break;
    }
  }
  double stamp = 0;
  std::string stamp_text;
  if (have_timestamps_) {
    if (!date.empty()) {
      // YYYYMMDD: written as YYYY-MM-DD for the one timestamp parser.
      if (date.size() != 8 || !std::all_of(date.begin(), date.end(), [](char c) { return c >= '0' && c <= '9'; }))
        fail_at(text, date, "Date", fmt::format("not a date (YYYYMMDD): '{}'", printable(date)));
      stamp_text = fmt::format("{}-{}-{} {}", date.substr(0, 4), date.substr(4, 2), date.substr(6, 2), clock);
    } else {
      stamp_text = std::string(clock);
    }
    stamp = parse_stamp(stamp_text, "Time", stamp_text);
  } else {
    stamp = untimed_stamp(gpu_index);
  }
  commit_row(gpu_index, {}, {}, stamp, stamp_text);
}

}  // namespace epochcast
