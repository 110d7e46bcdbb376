// dcgmi dmon logs: #Entity header, units row, GPU rows.
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

void TraceParser::dmon_line(std::string_view text) {
  const std::string_view t = trim(text);
  if (t.empty()) return;
  if (starts_with_ci(t, "#Entity") || starts_with_ci(t, "# Entity")) {
    dmon_header(text);
    return;
  }
  if (t[0] == '#') {
    // A comment, e.g. the command line: "# dcgmi dmon -e 203,155 -d 100".
    const std::size_t d = t.find("-d ");
    if (d != std::string_view::npos && dmon_interval_s_ == 0) {
      std::string_view rest = trim(t.substr(d + 3));
      double ms = 0;
      std::string_view after;
      if (detail::parse_leading_double(rest, ms, after) && ms > 0) dmon_interval_s_ = ms / 1000.0;
    }
    return;
  }
  if (starts_with_ci(t, "ID") && (t.size() == 2 || detail::is_space(t[2]))) {
    dmon_units(text);
    return;
  }
  if (!header_done_) fail(1, "(header)", "dcgmi dmon data before the #Entity header");
  dmon_row(text);
}

void TraceParser::dmon_header(std::string_view text) {
  if (header_done_) {
    if (trim(text) != header_text_)
      fail(1, "(header)", "a second, different #Entity header: dmon logs of different fields are mixed");
    ++repeated_headers_;
    return;
  }
  header_text_ = std::string(trim(text));
  columns_.clear();
  metrics_.clear();
  busy_slot_ = -1;
  std::vector<std::string> ignored;
  // Tokens after "#Entity" (or "# Entity"), with their byte offsets for the units row.
  // The line starts "#Entity" or "# Entity" in any case (dmon_line checked): skip to after it.
  std::size_t pos = text.find('#') + 1;
  while (pos < text.size() && detail::is_space(text[pos])) ++pos;
  pos += 6;
  while (pos < text.size()) {
    while (pos < text.size() && detail::is_space(text[pos])) ++pos;
    if (pos >= text.size()) break;
    std::size_t end = pos;
    while (end < text.size() && !detail::is_space(text[end])) ++end;
    const std::string_view name = text.substr(pos, end - pos);
    Column col;
    col.name = std::string(name);
    col.start = static_cast<std::uint32_t>(pos);
    if (equals_ci(name, "TIMESTAMP") || equals_ci(name, "TIME")) {
      col.kind = ColumnKind::kTimestamp;
    } else if (auto m = metric_by_dmon_name(name)) {
      col.kind = ColumnKind::kMetric;
      col.canonical_unit = std::string(info(*m).unit);
      col.slot = add_metric_slot(*m, name);
      if (col.slot < 0) col.kind = ColumnKind::kIgnored;
    } else {
      ignored.emplace_back(name);
    }
    columns_.push_back(std::move(col));
    pos = end;
  }
  if (!ignored.empty())
    warn_once(fmt::format("ignored dcgmi columns epochcast has no metric for: {}", detail::name_list(ignored)));
  if (metrics_.empty()) fail(1, "(header)", "the #Entity header names no metric epochcast reads");
  row_.assign(metrics_.size(), kNaN);
  set_column_limits();
  header_done_ = true;
}

void TraceParser::dmon_units(std::string_view text) {
  if (!header_done_) fail(1, "(units)", "dcgmi units row before the #Entity header");
  if (!units_text_.empty()) {
    if (trim(text) != units_text_) fail(1, "(units)", "a second, different dcgmi units row");
    return;
  }
  units_text_ = std::string(trim(text));
  std::size_t pos = text.find_first_of("Ii") + 2;  // after "ID"
  while (pos < text.size()) {
    while (pos < text.size() && detail::is_space(text[pos])) ++pos;
    if (pos >= text.size()) break;
    std::size_t end = pos;
    while (end < text.size() && !detail::is_space(text[end])) ++end;
    const std::string_view unit = text.substr(pos, end - pos);
    // The unit belongs to the column whose header span holds its first character.
    Column* owner = nullptr;
    for (auto& c : columns_)
      if (c.start <= pos + 1) owner = &c;  // +1: units are sometimes one space left of names
    if (owner && owner->kind == ColumnKind::kMetric) {
      const auto f = detail::unit_factor(unit, owner->canonical_unit);
      if (!f)
        fail(pos + 1, owner->name,
             fmt::format("unknown unit '{}' for {} (expected {})", printable(unit), owner->name,
                         owner->canonical_unit.empty() ? "no unit" : owner->canonical_unit));
      owner->header_unit = std::string(unit);
      owner->header_factor = *f;
    }
    pos = end;
  }
}

void TraceParser::dmon_row(std::string_view text) {
  fields_.clear();
  std::size_t pos = 0;
  while (pos < text.size()) {
    while (pos < text.size() && detail::is_space(text[pos])) ++pos;
    if (pos >= text.size()) break;
    std::size_t end = pos;
    while (end < text.size() && !detail::is_space(text[end])) ++end;
    fields_.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  // A timestamp before the entity (tools that prefix each line): one token or date + time.
  double prefix_stamp = 0;
  std::string_view prefix_text;
  std::size_t first = 0;
  if (!fields_.empty() && !starts_with_ci(fields_[0], "GPU") && !(fields_[0][0] >= 'A' && fields_[0][0] <= 'Z')) {
    std::int64_t whole = 0;
    double frac = 0;
    detail::TimeKind kind{};
    if (fields_.size() > 1) {
      const std::string_view two(fields_[0].data(),
                                 static_cast<std::size_t>(fields_[1].data() + fields_[1].size() - fields_[0].data()));
      if (detail::parse_timestamp(two, local_time_, whole, frac, kind)) {
        prefix_text = two;
        first = 2;
      }
    }
    if (first == 0) {
      prefix_text = fields_[0];
      first = 1;
    }
    prefix_stamp = parse_stamp(prefix_text, "(timestamp)", text);
  }
  if (fields_.size() < first + 2)
    fail(text.size() + 1, "Entity", "a dcgmi row needs an entity and an id ('GPU 0')");
  const std::string_view entity = fields_[first];
  if (!equals_ci(entity, "GPU")) {
    ++skipped_entities_;
    warn_once(fmt::format("skipped dcgmi rows of entity '{}' (only GPU rows are read)", printable(entity)));
    return;
  }
  int gpu_index = -1;
  if (!detail::parse_int(fields_[first + 1], gpu_index) || gpu_index < 0)
    fail_at(text, fields_[first + 1], "Entity", fmt::format("not a GPU id: '{}'", printable(fields_[first + 1])));
  const std::size_t n = fields_.size() - first - 2;
  check_field_count(text, first + 2, columns_);
  double stamp = prefix_stamp;
  std::string_view stamp_text = prefix_text;
  row_field_offset_ = first + 2;  // fields_[column + this] is the column's text
  for (std::size_t i = 0; i < n; ++i) {
    Column& col = columns_[i];
    const std::string_view f = fields_[first + 2 + i];
    if (col.kind == ColumnKind::kTimestamp) {
      stamp_text = f;
      stamp = parse_stamp(f, col.name, text);
      continue;
    }
    if (col.kind != ColumnKind::kMetric) continue;
    double v = 0;
    if (equals_ci(f, "N/A") || f == "-") {
      ++missing_values_;
      v = kNaN;
    } else if (!detail::parse_double(f, v) || std::isinf(v)) {
      fail_at(text, f, col.name, detail::bad_number(f));
    } else if (std::isnan(v)) {
      ++missing_values_;
    } else {
      v = converted(v, col.header_factor, col, text, f, f);
    }
    row_[static_cast<std::size_t>(col.slot)] = checked(col, v);
  }
  const bool timestamped = first > 0 || std::any_of(columns_.begin(), columns_.end(), [](const Column& c) {
                             return c.kind == ColumnKind::kTimestamp;
                           });
  if (!timestamped) {
    have_timestamps_ = false;
    stamp = untimed_stamp(gpu_index);
  }
  commit_row(gpu_index, {}, {}, stamp, stamp_text);
}

}  // namespace epochcast
