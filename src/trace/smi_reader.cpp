// nvidia-smi CSV (--format=csv[,nounits][,noheader]): header, rows, values with units.
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

// nvidia-smi's identity fields (and their gpu_ aliases).
bool is_smi_timestamp(std::string_view n) { return n == "timestamp"; }
bool is_smi_index(std::string_view n) { return n == "index" || n == "gpu_index"; }
bool is_smi_name(std::string_view n) { return n == "name" || n == "gpu_name"; }
bool is_smi_uuid(std::string_view n) { return n == "uuid" || n == "gpu_uuid"; }

}  // namespace

bool TraceParser::looks_like_smi_header(std::string_view t) const {
  // A header's first field is a field name, never a timestamp or number.
  const std::size_t comma = t.find(',');
  std::string_view first = trim(t.substr(0, comma));
  const std::size_t bracket = first.find(" [");
  if (bracket != std::string_view::npos) first = trim(first.substr(0, bracket));
  if (first.empty()) return false;
  return is_smi_timestamp(first) || is_smi_index(first) || is_smi_name(first) ||
         is_smi_uuid(first) || metric_by_smi_name(first).has_value() ||
         (first.find('.') != std::string_view::npos && !(first[0] >= '0' && first[0] <= '9'));
}

void TraceParser::smi_header(std::string_view text, bool from_fields) {
  // All or nothing: a header that fails part way (an unknown unit in its 14th column, under
  // --lenient, after a --fields list) must leave the columns it replaces, not a mix of the two
  // whose slots outrun the row (fuzz_trace, 2026-12-04: a heap overflow in smi_row). What the
  // impl changes before its last possible throw is kept here; the row buffer, the flags and the
  // GPU stores it sets only after it.
  struct Saved {
    std::string header_text;
    std::vector<Column> columns;
    std::vector<Metric> metrics;
    int busy_slot;
  } saved{header_text_, columns_, metrics_, busy_slot_};
  try {
    smi_header_impl(text, from_fields);
  } catch (...) {
    header_text_ = std::move(saved.header_text);
    columns_ = std::move(saved.columns);
    metrics_ = std::move(saved.metrics);
    busy_slot_ = saved.busy_slot;
    throw;
  }
}

void TraceParser::smi_header_impl(std::string_view text, bool from_fields) {
  if (!from_fields) header_text_ = std::string(trim(text));
  columns_.clear();
  metrics_.clear();
  busy_slot_ = -1;
  bool has_timestamp = false;
  std::vector<std::string> ignored;
  split_csv(text, false);
  const std::vector<std::string_view> fields = fields_;
  for (std::string_view raw : fields) {
    std::string_view f = trim(raw);
    Column col;
    std::string_view unit;
    const std::size_t open = f.find(" [");
    std::string_view name = f;
    if (open != std::string_view::npos && f.back() == ']') {
      name = trim(f.substr(0, open));
      unit = f.substr(open + 2, f.size() - open - 3);
    }
    col.name = std::string(f);
    if (name.empty()) {
      if (from_fields) throw Error(ErrorCode::kInvalidArgument, "empty name in the --fields list");
      fail_at(text, raw, "(header)", "empty column name in the nvidia-smi header");
    }
    if (is_smi_timestamp(name)) {
      col.kind = ColumnKind::kTimestamp;
      has_timestamp = true;
    } else if (is_smi_index(name)) {
      col.kind = ColumnKind::kIndex;
    } else if (is_smi_name(name)) {
      col.kind = ColumnKind::kName;
    } else if (is_smi_uuid(name)) {
      col.kind = ColumnKind::kUuid;
    } else if (auto m = metric_by_smi_name(name)) {
      col.kind = ColumnKind::kMetric;
      col.canonical_unit = std::string(info(*m).unit);
      col.header_unit = std::string(unit);
      const auto factor = detail::unit_factor(unit, info(*m).unit);
      if (!factor) {
        const std::string msg = fmt::format("unknown unit '{}' for {} (expected {})", unit, name,
                                            info(*m).unit.empty() ? "no unit" : info(*m).unit);
        if (from_fields) throw Error(ErrorCode::kInvalidArgument, "--fields: " + msg);
        fail_at(text, raw, col.name, msg);
      }
      col.header_factor = *factor;
      col.slot = add_metric_slot(*m, col.name);
      if (col.slot < 0) col.kind = ColumnKind::kIgnored;
    } else {
      if (from_fields && name.find(' ') != std::string_view::npos)
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("--fields: '{}' is not an nvidia-smi field name", name));
      ignored.emplace_back(name);
    }
    columns_.push_back(std::move(col));
  }
  if (!ignored.empty())
    warn_once(fmt::format("ignored nvidia-smi columns epochcast has no metric for: {}",
                          detail::name_list(ignored)));
  if (metrics_.empty()) {
    if (from_fields) throw Error(ErrorCode::kInvalidArgument, "--fields names no metric epochcast reads");
    fail(1, "(header)", "the nvidia-smi header names no metric epochcast reads");
  }
  have_timestamps_ = has_timestamp;  // without: build_impl says which interval was used
  row_.assign(metrics_.size(), kNaN);
  set_column_limits();
  gpus_.clear();  // empty here: dispatch refuses a header after rows (no rows are dropped)
  header_done_ = true;
}

double TraceParser::smi_value(Column& col, std::string_view text, std::string_view field) {
  const std::string_view t = trim(text);
  if (t.empty()) fail_at(field, text, col.name, "empty value");
  if (t[0] == '[') {  // [N/A], [Not Supported], [Unknown Error], [GPU is lost], …
    ++missing_values_;
    return kNaN;
  }
  const Metric m = metrics_[static_cast<std::size_t>(col.slot)];
  if (m == Metric::kPstate && (t[0] == 'P' || t[0] == 'p')) {
    int p = 0;
    if (!detail::parse_int(t.substr(1), p) || p < 0 || p > 32)
      fail_at(field, text, col.name, fmt::format("not a performance state: '{}'", printable(t)));
    return p;
  }
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(t.data() + 2, t.data() + t.size(), v, 16);
    if (ec != std::errc{} || p != t.data() + t.size())
      fail_at(field, text, col.name, fmt::format("not a hexadecimal number: '{}'", printable(t)));
    return static_cast<double>(v);
  }
  double v = 0;
  std::string_view rest;
  if (!detail::parse_leading_double(t, v, rest))
    fail_at(field, text, col.name, detail::bad_number(t));
  if (!std::isfinite(v)) {
    if (std::isnan(v)) {
      ++missing_values_;
      return kNaN;
    }
    fail_at(field, text, col.name, fmt::format("not a finite number: '{}'", printable(t)));
  }
  rest = trim(rest);
  if (rest.empty()) {
    if (col.values_have_units == 1 && !col.header_unit.empty())
      fail_at(field, text, col.name,
              fmt::format("value '{}' lacks its unit '{}' (line cut short?)", printable(t), col.header_unit));
    if (col.values_have_units < 0) col.values_have_units = 0;
    return converted(v, col.header_factor, col, field, text, t);
  }
  if (col.values_have_units < 0) col.values_have_units = 1;
  // The unit is nearly always the last value's: compared inline (a memcmp call per value showed in perf).
  const std::string& last = col.last_value_unit;
  bool same = rest.size() == last.size();
  for (std::size_t i = 0; same && i < rest.size(); ++i) same = rest[i] == last[i];
  if (!same) {
    const auto f = detail::unit_factor(rest, col.canonical_unit);
    if (!f)
      fail_at(field, rest, col.name,
              fmt::format("unknown or wrong unit '{}' (expected {})", printable(rest),
                          col.canonical_unit.empty() ? "no unit" : col.canonical_unit));
    col.last_value_unit = std::string(rest);
    col.last_value_factor = *f;
  }
  return converted(v, col.last_value_factor, col, field, text, t);
}

// A finite value can overflow on conversion ("1e308 GiB"): an error, like "inf" itself.
double TraceParser::converted(double v, double factor, const Column& col, std::string_view line,
                              std::string_view at, std::string_view value) const {
  const double out = v * factor;
  if (!std::isfinite(out))
    fail_at(line, at, col.name,
            fmt::format("value '{}' is out of range in {}", printable(value),
                        col.canonical_unit.empty() ? "its unit" : col.canonical_unit));
  return out;
}

void TraceParser::smi_row(std::string_view text) {
  split_csv(text, false);
  check_field_count(text, 0, columns_);
  int gpu_index = -1;
  std::string_view name, uuid, stamp_text;
  double stamp = 0;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    Column& col = columns_[i];
    const std::string_view f = fields_[i];
    switch (col.kind) {
      case ColumnKind::kTimestamp:
        stamp_text = f;
        stamp = parse_stamp(f, col.name, text);
        break;
      case ColumnKind::kIndex:
        if (!detail::parse_int(trim(f), gpu_index) || gpu_index < 0)
          fail_at(text, f, col.name, fmt::format("not a GPU index: '{}'", printable(trim(f))));
        break;
      case ColumnKind::kName: name = trim(f); break;
      case ColumnKind::kUuid: uuid = trim(f); break;
      case ColumnKind::kMetric:
        row_[static_cast<std::size_t>(col.slot)] = checked(col, smi_value(col, f, text));
        break;
      case ColumnKind::kIgnored:
      case ColumnKind::kDate:  // nvidia-smi dmon only
      case ColumnKind::kTime: break;
    }
  }
  if (!have_timestamps_) stamp = untimed_stamp(gpu_index);
  commit_row(gpu_index, name, uuid, stamp, stamp_text);
}

}  // namespace epochcast
