#include "trace_parser.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace epochcast {

using detail::equals_ci;
using detail::starts_with_ci;
using detail::trim;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::size_t kMaxSkipsKept = 20;
constexpr std::size_t kMaxGpus = 4096;  // hostile input must not make a store per row

std::string printable(std::string_view s, std::size_t max = 40) {
  std::string out;
  for (char c : s.substr(0, max)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) out += fmt::format("\\x{:02x}", u);
    else out += c;
  }
  if (s.size() > max) out += "…";
  return out;
}

// nvidia-smi's identity fields (and their gpu_ aliases).
bool is_smi_timestamp(std::string_view n) { return n == "timestamp"; }
bool is_smi_index(std::string_view n) { return n == "index" || n == "gpu_index"; }
bool is_smi_name(std::string_view n) { return n == "name" || n == "gpu_name"; }
bool is_smi_uuid(std::string_view n) { return n == "uuid" || n == "gpu_uuid"; }

// First byte that cannot be in a text log (a control byte other than tab, or DEL), else npos.
// Eight bytes at a time: this check sees every byte of every trace.
std::size_t find_control_byte(std::string_view s) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    const std::uint64_t below_space = (w - kOnes * 0x20) & ~w & kHigh;
    const std::uint64_t x = w ^ (kOnes * 0x7f);
    const std::uint64_t is_del = (x - kOnes) & ~x & kHigh;
    if (below_space | is_del) break;  // look closer (tabs are allowed)
  }
  for (; i < s.size(); ++i) {
    const auto u = static_cast<unsigned char>(s[i]);
    if ((u < 0x20 && u != '\t') || u == 0x7f) return i;
    if (i % 8 == 7 && i + 9 <= s.size()) {  // back to the fast path after a clean word
      const std::size_t rest = find_control_byte(s.substr(i + 1));
      return rest == std::string_view::npos ? rest : i + 1 + rest;
    }
  }
  return std::string_view::npos;
}

}  // namespace

TraceParser::TraceParser(std::string name, ReadOptions options, bool host)
    : file_(std::move(name)), options_(std::move(options)), host_(host), format_(options_.format) {
  if (host_) format_ = TraceFormat::kCanonical;
  if (format_ == TraceFormat::kNvidiaSmi && !options_.smi_fields.empty()) {
    // csv,noheader: the field list is the header. A header line, if present, replaces it.
    std::string joined;
    for (const auto& f : options_.smi_fields) {
      if (!joined.empty()) joined += ", ";
      joined += f;
    }
    smi_header(joined, true);
  }
  if (options_.interval_s && !(*options_.interval_s > 0))
    throw Error(ErrorCode::kInvalidArgument, "the sampling interval must be positive");
}

void TraceParser::fail(std::size_t column, std::string_view field, const std::string& message) const {
  throw Error(ErrorCode::kParse, message,
              SourceLocation{file_, line_no_, static_cast<std::uint32_t>(column), std::string(field)});
}

void TraceParser::fail_at(std::string_view line, std::string_view at, std::string_view field,
                          const std::string& message) const {
  std::size_t column = 1;
  while (!at.empty() && detail::is_space(at.front())) at.remove_prefix(1);  // point at the value
  if (at.data() >= line.data() && at.data() <= line.data() + line.size())
    column = static_cast<std::size_t>(at.data() - line.data()) + 1;
  fail(column, field, message);
}

void TraceParser::warn_once(const std::string& message) {
  if (std::find(diag_.warnings.begin(), diag_.warnings.end(), message) == diag_.warnings.end())
    diag_.warnings.push_back(message);
}

void TraceParser::skip_row(std::string reason, std::uint64_t line) {
  ++diag_.rows_skipped;
  if (diag_.skips.size() < kMaxSkipsKept) diag_.skips.push_back({line, std::move(reason)});
}

void TraceParser::line_too_long(std::string_view start) {
  ++line_no_;
  for (std::size_t i = 0; i < start.size(); ++i) {
    const auto u = static_cast<unsigned char>(start[i]);
    if ((u < 0x20 && u != '\t' && u != '\r') || u == 0x7f)
      fail(i + 1, "(line)", fmt::format("binary data (byte 0x{:02x}); not a text trace", u));
  }
  fail(1, "(line)", fmt::format("line longer than {} bytes without a newline; not a trace log",
                                kMaxLineBytes));
}

void TraceParser::line(std::string_view text, bool terminated) {
  ++line_no_;
  row_bytes_ = text.size() + 1;
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  if (line_no_ == 1 && text.size() >= 3 && std::memcmp(text.data(), "\xEF\xBB\xBF", 3) == 0)
    text.remove_prefix(3);
  const bool was_header_done = header_done_;
  try {
    if (const std::size_t bad = find_control_byte(text); bad != std::string_view::npos)
      fail(bad + 1, "(line)",
           fmt::format("binary data (byte 0x{:02x}); not a text trace", static_cast<unsigned char>(text[bad])));
    if (format_ == TraceFormat::kAuto) {
      pending_.emplace_back(line_no_, std::string(text));
      const std::string_view t = trim(text);
      const bool decisive = (!t.empty() && t[0] != '#') || starts_with_ci(t, "#Entity") ||
                            starts_with_ci(t, "# Entity") || starts_with_ci(t, "# epochcast-trace");
      if (decisive) detect_and_replay();
      else if (pending_.size() > 1000) fail(1, "(header)", "no header in the first 1000 lines");
      return;
    }
    dispatch(text);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kParse || !was_header_done) throw;
    if (!terminated) {
      diag_.truncated_last_line = true;
      skip_row("last line cut mid-write: " + e.detail(), line_no_);
      warn_once(fmt::format("dropped the last line ({}), cut mid-write", line_no_));
      return;
    }
    if (!options_.lenient) throw;
    skip_row(fmt::format("column {}, field '{}': {}", e.where().column, e.where().field, e.detail()), line_no_);
  }
}

void TraceParser::detect_and_replay() {
  std::string head;
  for (const auto& [no, text] : pending_) {
    head += text;
    head += '\n';
  }
  TraceFormat f = detect_format(head);
  if (f == TraceFormat::kAuto && !options_.smi_fields.empty()) f = TraceFormat::kNvidiaSmi;
  if (f == TraceFormat::kAuto)
    fail(1, "(header)",
         fmt::format("unrecognised trace format (first line '{}'); expected nvidia-smi CSV, "
                     "dcgmi dmon, or epochcast CSV (--format), or pass --fields for a csv,noheader log",
                     printable(trim(pending_.back().second))));
  format_ = f;
  if (format_ == TraceFormat::kNvidiaSmi && !options_.smi_fields.empty() && !header_done_) {
    std::string joined;
    for (const auto& fld : options_.smi_fields) {
      if (!joined.empty()) joined += ", ";
      joined += fld;
    }
    smi_header(joined, true);
  }
  auto pending = std::move(pending_);
  pending_.clear();
  const std::uint64_t saved = line_no_;
  for (const auto& [no, text] : pending) {
    line_no_ = no;
    dispatch(text);
  }
  line_no_ = saved;
}

void TraceParser::dispatch(std::string_view text) {
  switch (format_) {
    case TraceFormat::kNvidiaSmi: {
      const std::string_view t = trim(text);
      if (t.empty()) return;
      if (t[0] == '#') {
        if (starts_with_ci(t, "#Entity") || starts_with_ci(t, "# Entity"))
          fail(1, "(header)", "a dcgmi dmon header inside an nvidia-smi log: formats are mixed");
        return;  // nvidia-smi writes no comments; a user's note is skipped
      }
      // Data rows start with a digit (timestamp or index); only other lines can be headers.
      const bool maybe_header = !header_done_ || !(t[0] >= '0' && t[0] <= '9');
      if (maybe_header && looks_like_smi_header(t)) {
        if (header_done_ && !header_text_.empty()) {
          if (t != header_text_)
            fail(1, "(header)", "a second, different nvidia-smi header: logs of different queries are mixed");
          ++repeated_headers_;
          return;
        }
        smi_header(t, false);
        return;
      }
      if (!header_done_)
        fail(1, "(header)",
             "nvidia-smi data without a header (csv,noheader): pass the field list with --fields");
      smi_row(text);
      return;
    }
    case TraceFormat::kDcgmi: dmon_line(text); return;
    case TraceFormat::kCanonical: canonical_line(text); return;
    case TraceFormat::kAuto: break;
  }
  throw Error(ErrorCode::kInternal, "trace format not resolved");
}

// ---------------------------------------------------------------------------------------------
// Shared helpers

void TraceParser::split_csv(std::string_view text, bool quotes) {
  fields_.clear();
  std::size_t pos = 0;
  while (true) {
    if (quotes) {
      std::size_t p = pos;
      while (p < text.size() && text[p] == ' ') ++p;
      if (p < text.size() && text[p] == '"') {
        const std::size_t close = text.find('"', p + 1);
        if (close != std::string_view::npos) {
          fields_.push_back(text.substr(p + 1, close - p - 1));
          const std::size_t comma = text.find(',', close);
          if (comma == std::string_view::npos) return;
          pos = comma + 1;
          continue;
        }
      }
    }
    // Fields are short: a plain loop beats a memchr call per field.
    std::size_t comma = pos;
    while (comma < text.size() && text[comma] != ',') ++comma;
    if (comma == text.size()) {
      fields_.push_back(text.substr(pos));
      return;
    }
    fields_.push_back(text.substr(pos, comma - pos));
    pos = comma + 1;
  }
}

int TraceParser::add_metric_slot(Metric m, std::string_view column_name) {
  if (std::find(metrics_.begin(), metrics_.end(), m) != metrics_.end()) {
    warn_once(fmt::format("column '{}' repeats metric {}; the repeat is ignored", column_name,
                          info(m).tag));
    return -1;
  }
  metrics_.push_back(m);
  return static_cast<int>(metrics_.size() - 1);
}

double TraceParser::parse_stamp(std::string_view text, std::string_view field, std::string_view line) {
  const std::string_view t = trim(text);
  std::int64_t whole = 0;
  double frac = 0;
  detail::TimeKind kind{};
  if (!detail::parse_timestamp(t, local_time_, whole, frac, kind))
    fail_at(line, text, field, fmt::format("not a timestamp: '{}'", printable(t)));
  if (!time_kind_set_) {
    time_kind_ = kind;
    time_kind_set_ = true;
  } else if (kind != time_kind_) {
    fail_at(line, text, field,
            fmt::format("timestamp '{}' is written differently from the first one (date, zone or "
                        "time of day only)", printable(t)));
  }
  if (!base_set_) {
    base_s_ = whole;
    base_set_ = true;
  }
  return static_cast<double>(whole - base_s_) + frac;
}

void TraceParser::commit_row(int gpu_index, std::string_view name, std::string_view uuid,
                             double stamp_s, std::string_view stamp_text) {
  // Find the GPU's store: usually the same as the last row's or the next one.
  std::size_t g = gpus_.size();
  auto matches = [&](const GpuRows& r) {
    if (gpu_index >= 0 || r.id.index >= 0) return r.id.index == gpu_index;
    if (!uuid.empty() || !r.id.uuid.empty()) return r.id.uuid == uuid;
    return true;  // no identity columns: one GPU
  };
  if (last_gpu_ < gpus_.size() && matches(gpus_[last_gpu_])) {
    g = last_gpu_;
  } else {
    for (std::size_t i = 0; i < gpus_.size(); ++i)
      if (matches(gpus_[i])) {
        g = i;
        break;
      }
  }
  if (g == gpus_.size()) {
    if (gpus_.size() >= kMaxGpus)
      fail(1, "(identity)", fmt::format("more than {} distinct GPUs in one trace; not a GPU log", kMaxGpus));
    GpuRows r;
    r.id.index = gpu_index;
    r.id.name = std::string(name);
    r.id.uuid = std::string(uuid);
    r.values.resize(metrics_.size());
    gpus_.push_back(std::move(r));
  }
  last_gpu_ = g;
  GpuRows& r = gpus_[g];
  if (r.id.name.empty() && !name.empty()) r.id.name = std::string(name);
  if (r.id.uuid.empty() && !uuid.empty()) r.id.uuid = std::string(uuid);
  ++r.ticks;
  ++rows_accepted_;
  ++diag_.rows_read;
  // Utilisation (else power) decides which GPU was busy.
  if (busy_slot_ < 0) {
    const auto util = std::find(metrics_.begin(), metrics_.end(), Metric::kGpuUtil);
    const auto power = std::find(metrics_.begin(), metrics_.end(), Metric::kPower);
    busy_slot_ = util != metrics_.end() ? static_cast<int>(util - metrics_.begin())
                 : power != metrics_.end() ? static_cast<int>(power - metrics_.begin()) : static_cast<int>(metrics_.size());
  }
  if (static_cast<std::size_t>(busy_slot_) < metrics_.size() && !std::isnan(row_[static_cast<std::size_t>(busy_slot_)])) {
    r.busy_sum += row_[static_cast<std::size_t>(busy_slot_)];
    ++r.busy_n;
  }
  if (options_.gpu && r.id.index != *options_.gpu) return;  // counted, not stored
  if (r.stamp_s.empty()) {
    r.first_stamp = std::string(trim(stamp_text));
    if (size_hint_bytes_ > 0 && gpus_.size() == 1 && row_bytes_ > 0) {
      // Reserve for the whole file once, instead of doubling (and copying) a dozen vectors.
      const std::size_t expected = std::min<std::size_t>(size_hint_bytes_ / row_bytes_ + 16, std::size_t{1} << 27);
      r.stamp_s.reserve(expected);
      r.values.resize(metrics_.size());
      for (auto& v : r.values) v.reserve(expected);
    }
  }
  r.stamp_s.push_back(stamp_s);
  if (r.values.size() < metrics_.size()) r.values.resize(metrics_.size());
  for (std::size_t s = 0; s < metrics_.size(); ++s) r.values[s].push_back(row_[s]);
}

// ---------------------------------------------------------------------------------------------
// nvidia-smi CSV

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
  if (!from_fields) header_text_ = std::string(trim(text));
  columns_.clear();
  metrics_.clear();
  busy_slot_ = -1;
  gpus_.clear();
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
                          fmt::join(ignored, ", ")));
  if (metrics_.empty()) {
    if (from_fields) throw Error(ErrorCode::kInvalidArgument, "--fields names no metric epochcast reads");
    fail(1, "(header)", "the nvidia-smi header names no metric epochcast reads");
  }
  have_timestamps_ = has_timestamp;
  if (!has_timestamp)
    warn_once(fmt::format("no timestamp column: samples assumed {} s apart",
                          options_.interval_s.value_or(1.0)));
  row_.assign(metrics_.size(), kNaN);
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
    fail_at(field, text, col.name, fmt::format("not a number: '{}'", printable(t)));
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
    return v * col.header_factor;
  }
  if (col.values_have_units < 0) col.values_have_units = 1;
  if (rest != col.last_value_unit) {
    const auto f = detail::unit_factor(rest, col.canonical_unit);
    if (!f)
      fail_at(field, rest, col.name,
              fmt::format("unknown or wrong unit '{}' (expected {})", printable(rest),
                          col.canonical_unit.empty() ? "no unit" : col.canonical_unit));
    col.last_value_unit = std::string(rest);
    col.last_value_factor = *f;
  }
  return v * col.last_value_factor;
}

void TraceParser::smi_row(std::string_view text) {
  split_csv(text, false);
  if (fields_.size() != columns_.size()) {
    if (fields_.size() < columns_.size())
      fail(text.size() + 1, columns_[fields_.size()].name,
           fmt::format("wrong column count ({}, expected {})", fields_.size(), columns_.size()));
    fail_at(text, fields_[columns_.size()], "(extra column)",
            fmt::format("wrong column count ({}, expected {})", fields_.size(), columns_.size()));
  }
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
        row_[static_cast<std::size_t>(col.slot)] = smi_value(col, f, text);
        break;
      case ColumnKind::kIgnored: break;
    }
  }
  if (!have_timestamps_) {
    // Ticks of this GPU so far x interval (the GPU's store decides the tick count).
    std::size_t ticks = 0;
    for (const auto& g : gpus_)
      if (g.id.index == gpu_index) ticks = g.ticks;
    stamp = static_cast<double>(ticks) * options_.interval_s.value_or(1.0);
  }
  commit_row(gpu_index, name, uuid, stamp, stamp_text);
}

// ---------------------------------------------------------------------------------------------
// dcgmi dmon

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
  std::size_t pos = text.find("Entity");
  if (pos == std::string_view::npos) pos = text.find("ENTITY");
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
    warn_once(fmt::format("ignored dcgmi columns epochcast has no metric for: {}", fmt::join(ignored, ", ")));
  if (metrics_.empty()) fail(1, "(header)", "the #Entity header names no metric epochcast reads");
  row_.assign(metrics_.size(), kNaN);
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
  if (n != columns_.size()) {
    if (n < columns_.size())
      fail(text.size() + 1, columns_[n].name,
           fmt::format("wrong column count ({}, expected {})", n, columns_.size()));
    fail_at(text, fields_[first + 2 + columns_.size()], "(extra column)",
            fmt::format("wrong column count ({}, expected {})", n, columns_.size()));
  }
  double stamp = prefix_stamp;
  std::string_view stamp_text = prefix_text;
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
      fail_at(text, f, col.name, fmt::format("not a number: '{}'", printable(f)));
    } else if (std::isnan(v)) {
      ++missing_values_;
    } else {
      v *= col.header_factor;
    }
    row_[static_cast<std::size_t>(col.slot)] = v;
  }
  const bool timestamped = first > 0 || std::any_of(columns_.begin(), columns_.end(), [](const Column& c) {
                             return c.kind == ColumnKind::kTimestamp;
                           });
  if (!timestamped) {
    have_timestamps_ = false;
    std::uint64_t ticks = 0;
    for (const auto& g : gpus_)
      if (g.id.index == gpu_index) ticks = g.ticks;
    const double interval = options_.interval_s.value_or(dmon_interval_s_ > 0 ? dmon_interval_s_ : 1.0);
    stamp = static_cast<double>(ticks) * interval;
  }
  commit_row(gpu_index, {}, {}, stamp, stamp_text);
}

// ---------------------------------------------------------------------------------------------
// canonical CSV (and host CSV)

void TraceParser::canonical_line(std::string_view text) {
  const std::string_view t = trim(text);
  if (t.empty()) return;
  if (t[0] == '#') {
    if (starts_with_ci(t, "# epochcast-trace")) {
      const std::string_view version = trim(t.substr(17));
      if (!version.empty() && version != "v1")
        throw Error(ErrorCode::kUnsupported,
                    fmt::format("epochcast trace version '{}' is newer than this reader (v1)", printable(version)),
                    SourceLocation{file_, line_no_, 1, "(header)"});
      return;
    }
    // "# gpu_index=0 gpu_name=NVIDIA H200 gpu_uuid=GPU-…": values run to the next key.
    static constexpr std::string_view kKeys[] = {"gpu_index=", "gpu_name=", "gpu_uuid=", "interval_ms="};
    for (std::string_view key : kKeys) {
      const std::size_t at = t.find(key);
      if (at == std::string_view::npos) continue;
      std::size_t end = t.size();
      for (std::string_view other : kKeys) {
        const std::size_t o = t.find(other, at + key.size());
        if (o != std::string_view::npos && o < end) end = o;
      }
      const std::string_view value = trim(t.substr(at + key.size(), end - at - key.size()));
      if (key == "gpu_index=") (void)detail::parse_int(value, meta_gpu_index_);
      else if (key == "gpu_name=") meta_gpu_name_ = std::string(value);
      else if (key == "gpu_uuid=") meta_gpu_uuid_ = std::string(value);
      else if (double ms = 0; detail::parse_double(value, ms) && ms > 0 && !options_.interval_s)
        options_.interval_s = ms / 1000.0;
    }
    return;
  }
  if (!header_done_) {
    canonical_header(text);
    return;
  }
  if (trim(text) == header_text_) {
    ++repeated_headers_;
    return;
  }
  canonical_row(text);
}

void TraceParser::canonical_header(std::string_view text) {
  header_text_ = std::string(trim(text));
  columns_.clear();
  metrics_.clear();
  busy_slot_ = -1;
  split_csv(text, true);
  const std::vector<std::string_view> fields = fields_;
  // A host CSV (dstat-like sampler) names its columns without the host_ prefix.
  const bool host = host_ || std::any_of(fields.begin(), fields.end(), [](std::string_view f) {
                      return trim(f) == "cpu_util_pct";
                    });
  std::vector<std::string> ignored;
  bool has_timestamp = false;
  for (std::string_view raw : fields) {
    const std::string_view name = trim(raw);
    Column col;
    col.name = std::string(name);
    std::optional<Metric> m;
    if (name == "timestamp") {
      col.kind = ColumnKind::kTimestamp;
      has_timestamp = true;
    } else if (name == "gpu_index") {
      col.kind = ColumnKind::kIndex;
    } else if (name == "gpu_name") {
      col.kind = ColumnKind::kName;
    } else if (name == "gpu_uuid") {
      col.kind = ColumnKind::kUuid;
    } else if (host && name == "cpu_util_pct") {
      m = Metric::kHostCpuUtil;
    } else if (host && name == "mem_used_mib") {
      m = Metric::kHostMemUsed;
    } else {
      m = metric_by_tag(name);
      if (!m) ignored.emplace_back(name);
    }
    if (m) {
      col.kind = ColumnKind::kMetric;
      col.slot = add_metric_slot(*m, name);
      if (col.slot < 0) col.kind = ColumnKind::kIgnored;
    }
    columns_.push_back(std::move(col));
  }
  if (!has_timestamp) fail(1, "timestamp", "the CSV header has no 'timestamp' column");
  if (!ignored.empty())
    warn_once(fmt::format("ignored CSV columns that are not metric tags: {}", fmt::join(ignored, ", ")));
  if (metrics_.empty()) fail(1, "(header)", "the CSV header names no metric tag epochcast reads");
  row_.assign(metrics_.size(), kNaN);
  header_done_ = true;
}

void TraceParser::canonical_row(std::string_view text) {
  split_csv(text, true);
  if (fields_.size() != columns_.size()) {
    if (fields_.size() < columns_.size())
      fail(text.size() + 1, columns_[fields_.size()].name,
           fmt::format("wrong column count ({}, expected {})", fields_.size(), columns_.size()));
    fail_at(text, fields_[columns_.size()], "(extra column)",
            fmt::format("wrong column count ({}, expected {})", fields_.size(), columns_.size()));
  }
  int gpu_index = meta_gpu_index_;
  std::string_view name = meta_gpu_name_, uuid = meta_gpu_uuid_, stamp_text;
  double stamp = 0;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    const Column& col = columns_[i];
    const std::string_view f = trim(fields_[i]);
    switch (col.kind) {
      case ColumnKind::kTimestamp:
        stamp_text = f;
        stamp = parse_stamp(fields_[i], col.name, text);
        break;
      case ColumnKind::kIndex:
        if (!f.empty() && (!detail::parse_int(f, gpu_index) || gpu_index < 0))
          fail_at(text, fields_[i], col.name, fmt::format("not a GPU index: '{}'", printable(f)));
        break;
      case ColumnKind::kName:
        if (!f.empty()) name = f;
        break;
      case ColumnKind::kUuid:
        if (!f.empty()) uuid = f;
        break;
      case ColumnKind::kMetric: {
        double v = kNaN;
        if (f.empty() || equals_ci(f, "nan")) {
          ++missing_values_;
        } else if (!detail::parse_double(f, v) || !std::isfinite(v)) {
          fail_at(text, fields_[i], col.name, fmt::format("not a number: '{}'", printable(f)));
        }
        row_[static_cast<std::size_t>(col.slot)] = v;
        break;
      }
      case ColumnKind::kIgnored: break;
    }
  }
  commit_row(gpu_index, name, uuid, stamp, stamp_text);
}

// ---------------------------------------------------------------------------------------------
// Building the Trace

Trace TraceParser::finish() {
  if (format_ == TraceFormat::kAuto && !pending_.empty()) {
    line_no_ = pending_.back().first;
    fail(1, "(header)", "only comments or blank lines; no header found");
  }
  if (line_no_ == 0) {
    line_no_ = 1;
    fail(1, "(header)", "empty file");
  }
  if (!header_done_) fail(1, "(header)", "no header found");
  if (rows_accepted_ == 0) {
    const std::uint64_t saved = line_no_;
    line_no_ = saved + 1;
    if (diag_.rows_skipped > 0)
      fail(1, "(data)",
           fmt::format("no usable data rows: all {} skipped (first, line {}: {})", diag_.rows_skipped,
                       diag_.skips.front().line, diag_.skips.front().reason));
    if (skipped_entities_ > 0) fail(1, "(data)", "no GPU rows (only other dcgmi entities)");
    fail(1, "(data)", "header only: no data rows");
  }
  if (options_.gpu) {
    bool found = false;
    std::vector<std::string> present;
    for (const auto& g : gpus_) {
      found = found || g.id.index == *options_.gpu;
      present.push_back(std::to_string(g.id.index));
    }
    if (!found)
      throw Error(ErrorCode::kNotFound,
                  fmt::format("{}: GPU {} is not in this trace (GPUs present: {})", file_, *options_.gpu,
                              fmt::join(present, ", ")));
  }
  return build_impl(true);
}

Trace TraceParser::build_impl(bool steal) const {
  Trace t;
  t.source = file_;
  t.format = host_ ? "host-csv" : format_ == TraceFormat::kAuto ? "" : to_string(format_);
  t.diagnostics = diag_;
  auto& d = t.diagnostics;
  for (const auto& g : gpus_) t.gpus_in_source.push_back(g.id);
  if (gpus_.empty()) return t;

  // Which GPU: the requested one, else the busiest.
  std::size_t sel = 0;
  if (options_.gpu) {
    for (std::size_t i = 0; i < gpus_.size(); ++i)
      if (gpus_[i].id.index == *options_.gpu) sel = i;
  } else if (gpus_.size() > 1) {
    double best = -1;
    std::vector<std::string> listed;
    for (std::size_t i = 0; i < gpus_.size(); ++i) {
      const double mean = gpus_[i].busy_n ? gpus_[i].busy_sum / static_cast<double>(gpus_[i].busy_n) : 0;
      listed.push_back(fmt::format("{}{}{} ({:.1f} mean)", gpus_[i].id.index, gpus_[i].id.name.empty() ? "" : " ",
                                   gpus_[i].id.name, mean));
      if (mean > best) {
        best = mean;
        sel = i;
      }
    }
    const bool util = std::find(metrics_.begin(), metrics_.end(), Metric::kGpuUtil) != metrics_.end();
    d.warnings.push_back(fmt::format("the trace holds {} GPUs: {}; using GPU {}, the busiest by {} (choose with --gpu)",
                                     gpus_.size(), fmt::join(listed, ", "), gpus_[sel].id.index,
                                     util ? "utilization" : "power"));
  }
  GpuRows& g = gpus_[sel];
  t.gpu = g.id;
  if (t.gpu.name.empty()) t.gpu.name = meta_gpu_name_;
  t.first_timestamp = g.first_stamp;
  const std::size_t n = g.stamp_s.size();
  if (n == 0) return t;
  t.start_unix_s = static_cast<double>(base_s_) + g.stamp_s[0];

  // Time axis: monotone; roll-overs, repeats and clock steps counted.
  t.time_s.resize(n);
  t.time_s[0] = 0;
  double offset = 0, prev = g.stamp_s[0], last_dt = 0;
  for (std::size_t i = 1; i < n; ++i) {
    double raw = g.stamp_s[i] + offset;
    if (time_kind_ == detail::TimeKind::kTimeOfDay) {
      // Without a date the nearest reading wins: -23 h is a roll-over, +23 h a step back.
      if (raw < prev - 43200) {
        offset += 86400;
        raw += 86400;
        ++d.midnight_rollovers;
      } else if (raw > prev + 43200) {
        offset -= 86400;
        raw -= 86400;
      }
    }
    if (raw == prev) {
      ++d.repeated_timestamps;
    } else if (raw < prev) {
      ++d.backward_steps;
      const double shift = prev - raw + last_dt;
      offset += shift;
      raw += shift;
    } else {
      last_dt = raw - prev;
    }
    prev = raw;
    t.time_s[i] = raw - g.stamp_s[0];
  }
  if (d.repeated_timestamps)
    d.warnings.push_back(fmt::format("{} repeated timestamps (kept; two samples at the same time)", d.repeated_timestamps));
  if (d.backward_steps)
    d.warnings.push_back(fmt::format("the clock stepped backwards {} time(s); later samples were re-based to keep time monotone",
                                     d.backward_steps));
  if (d.midnight_rollovers)
    d.warnings.push_back(fmt::format("{} midnight roll-over(s) in time-of-day timestamps", d.midnight_rollovers));
  if (time_kind_ == detail::TimeKind::kTimeOfDay)
    d.warnings.push_back("timestamps carry no date: start time is seconds after local midnight");
  if (!have_timestamps_ && format_ == TraceFormat::kDcgmi) {
    const double interval = options_.interval_s.value_or(dmon_interval_s_ > 0 ? dmon_interval_s_ : 1.0);
    d.warnings.push_back(fmt::format("dcgmi dmon prints no timestamps: samples assumed {} s apart ({})", interval,
                                     options_.interval_s ? "as given" :
                                     dmon_interval_s_ > 0 ? "from the -d option in the log" : "default; set the interval"));
    t.start_unix_s = 0;
  }
  const double median = t.median_interval_s();
  if (median > 0)
    for (std::size_t i = 1; i < n; ++i)
      if (t.time_s[i] - t.time_s[i - 1] > 3 * median) ++d.gaps;
  if (d.gaps) d.warnings.push_back(fmt::format("{} gap(s) longer than 3x the median interval", d.gaps));

  if (repeated_headers_) d.warnings.push_back(fmt::format("{} repeated header line(s) skipped", repeated_headers_));
  if (d.rows_skipped && !d.truncated_last_line)
    d.warnings.push_back(fmt::format("{} bad row(s) skipped (--lenient)", d.rows_skipped));
  else if (d.rows_skipped > 1)
    d.warnings.push_back(fmt::format("{} bad row(s) skipped (--lenient)", d.rows_skipped - 1));

  t.channels.reserve(metrics_.size());
  for (std::size_t s = 0; s < metrics_.size(); ++s) {
    Channel c{metrics_[s], {}};
    if (s < g.values.size()) {
      if (steal) {
        c.values = std::move(g.values[s]);
        if (c.values.capacity() > c.values.size() + c.values.size() / 2 + 1024) c.values.shrink_to_fit();
      } else {
        c.values = g.values[s];
      }
    }
    c.values.resize(n, kNaN);
    t.channels.push_back(std::move(c));
  }
  std::size_t missing = 0;
  for (const auto& c : t.channels)
    for (double v : c.values) missing += std::isnan(v);
  if (missing)
    d.warnings.push_back(fmt::format("{} missing value(s) ([N/A], [Not Supported], N/A or empty) read as NaN", missing));
  return t;
}

}  // namespace epochcast
