#include "trace_parser.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace epochcast {

using detail::equals_ci;
using detail::kNaN;
using detail::printable;
using detail::starts_with_ci;
using detail::trim;

namespace {

constexpr std::size_t kMaxSkipsKept = 20;
constexpr std::size_t kMaxGpus = 4096;  // hostile input must not make a store per row

// First byte that cannot be in a text log (a control byte other than tab, or DEL), else npos.
// Eight bytes at a time: this check sees every byte of every trace.
std::size_t find_control_byte(std::string_view s) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
  std::size_t i = 0;
  while (i < s.size()) {
    if (i + 8 <= s.size()) {
      std::uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      const std::uint64_t below_space = (w - kOnes * 0x20) & ~w & kHigh;
      const std::uint64_t x = w ^ (kOnes * 0x7f);
      const std::uint64_t is_del = (x - kOnes) & ~x & kHigh;
      if ((below_space | is_del) == 0) {
        i += 8;
        continue;
      }
    }
    // A flagged word (or the tail): look byte by byte, since tabs are allowed.
    const std::size_t end = std::min(i + 8, s.size());
    for (; i < end; ++i) {
      const auto u = static_cast<unsigned char>(s[i]);
      if ((u < 0x20 && u != '\t') || u == 0x7f) return i;
    }
  }
  return std::string_view::npos;
}

// A byte-order mark, or ASCII letters with a zero byte after (UTF-16LE) or before (BE) each.
bool looks_like_utf16(std::string_view s) {
  if (s.size() >= 2 && ((s[0] == '\xFF' && s[1] == '\xFE') || (s[0] == '\xFE' && s[1] == '\xFF'))) return true;
  if (s.size() < 4) return false;
  auto ascii = [](char c) { return c >= 0x20 && c < 0x7f; };
  return (ascii(s[0]) && s[1] == 0 && ascii(s[2]) && s[3] == 0) || (s[0] == 0 && ascii(s[1]) && s[2] == 0 && ascii(s[3]));
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
  if (at.data() >= line.data() && at.data() <= line.data() + line.size()) {
    column = static_cast<std::size_t>(at.data() - line.data()) + 1;
  } else {
    // A quoted cell, unescaped into the splitter's buffer: its opening quote's column on.
    for (const text::CsvCell& c : splitter_.cells())
      if (c.quoted && at.data() >= c.text.data() && at.data() <= c.text.data() + c.text.size())
        column = c.column + 1 + static_cast<std::size_t>(at.data() - c.text.data());
  }
  fail(column, field, message);
}

void TraceParser::check_field_count(std::string_view text, std::size_t offset, const std::vector<Column>& cols) const {
  const std::size_t n = fields_.size() - offset;
  if (n == cols.size()) return;
  const std::string message = fmt::format("wrong column count ({}, expected {})", n, cols.size());
  if (n < cols.size()) fail(text.size() + 1, cols[n].name, message);
  fail_at(text, fields_[offset + cols.size()], "(extra column)", message);
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
    // PowerShell 5's `>` writes UTF-16: say so, not only "binary data (byte 0x00)".
    if (line_no_ == 1 && looks_like_utf16(text))
      fail(1, "(line)", "UTF-16 text (as PowerShell's > writes it); convert it to UTF-8, e.g. iconv -f UTF-16 -t UTF-8");
    if (const std::size_t bad = find_control_byte(text); bad != std::string_view::npos) {
      // Was "binary data (byte 0x0d)" for a whole log written with classic Mac OS line ends.
      if (text[bad] == '\r')
        fail(bad + 1, "(line)",
             "a carriage return inside a line: CR-only line ends (classic Mac OS)? convert with tr '\\r' '\\n'");
      fail(bad + 1, "(line)",
           fmt::format("binary data (byte 0x{:02x}); not a text trace", static_cast<unsigned char>(text[bad])));
    }
    if (format_ == TraceFormat::kAuto) {
      pending_.emplace_back(line_no_, std::string(text));
      const bool decisive = !detail::is_preamble(trim(text));
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
  if (f == TraceFormat::kAuto) {
    line_no_ = pending_.back().first;
    const std::string_view first = trim(pending_.back().second);
    if (const std::string what = recognise_foreign(first); !what.empty()) fail(1, "(header)", what);
    fail(1, "(header)",
         fmt::format("unrecognised trace format (first line '{}'); expected nvidia-smi CSV or dmon, dcgmi dmon, "
                     "dcgm-exporter /metrics, a DCGM_FI_* / Grafana / W&B / MLflow CSV, query_range JSON, or "
                     "epochcast CSV (--format), or pass --fields for a csv,noheader log",
                     printable(first)));
  }
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
        // After rows read by a --fields list, a header cannot take over: the rows read so far
        // were split by the list, and replacing the columns would drop them.
        if (header_done_ && !gpus_.empty())
          fail(1, "(header)", "an nvidia-smi header after data rows read with --fields: the log has a header, "
                              "drop --fields");
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
    case TraceFormat::kSmiDmon: smi_dmon_line(text); return;
    case TraceFormat::kExposition: exposition_line(text); return;
    case TraceFormat::kDcgmCsv:
    case TraceFormat::kGrafanaCsv:
    case TraceFormat::kWandb: wide_line(text); return;
    case TraceFormat::kMlflow: mlflow_line(text); return;
    case TraceFormat::kQueryRangeJson: fail(1, "(document)", "a query_range JSON document must start with '{'");
    case TraceFormat::kAuto: break;
  }
  throw Error(ErrorCode::kInternal, "trace format not resolved");
}

// ---------------------------------------------------------------------------------------------
// Shared helpers

void TraceParser::split_csv(std::string_view text, bool quotes) {
  const bool closed = splitter_.split(text, quotes);
  const std::vector<text::CsvCell>& cells = splitter_.cells();
  fields_.resize(cells.size());
  for (std::size_t i = 0; i < cells.size(); ++i) fields_[i] = cells[i].text;
  if (closed) return;
  // The open quote's column: the header's name for it when the header is read.
  const std::size_t i = fields_.size() - 1;
  std::string field = "(line)";
  if (header_done_ && i < wide_kinds_.size()) field = wide_kinds_[i].name;
  else if (header_done_ && i < columns_.size()) field = columns_[i].name;
  fail(splitter_.open_quote_column(), field, "a quoted field is not closed on this line (a '\"' without its partner)");
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

double TraceParser::no_timestamp_interval_s() const {
  if (options_.interval_s) return *options_.interval_s;
  if (format_ == TraceFormat::kDcgmi && dmon_interval_s_ > 0) return dmon_interval_s_;
  return kAssumedIntervalS;
}

double TraceParser::untimed_stamp(int gpu_index) const {
  std::uint64_t ticks = 0;  // the GPU's store decides the tick count
  for (const auto& g : gpus_)
    if (g.id.index == gpu_index) ticks = g.ticks;
  return static_cast<double>(ticks) * no_timestamp_interval_s();
}

void TraceParser::set_column_limits() {
  for (auto& c : columns_)
    if (c.kind == ColumnKind::kMetric && c.slot >= 0) {
      const MetricInfo& mi = info(metrics_[static_cast<std::size_t>(c.slot)]);
      c.min_value = mi.min_value;
      c.max_value = mi.max_value;
    }
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
  // A reading outside the metric's physical limits (util 250 %, negative power) is missing;
  // checked() marked the row as its values were parsed.
  if (impossible_in_row_) {
    impossible_in_row_ = false;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      const Column& col = columns_[c];
      if (col.kind != ColumnKind::kMetric || col.slot < 0) continue;
      double& v = row_[static_cast<std::size_t>(col.slot)];
      if (!(v < col.min_value || v > col.max_value)) continue;
      const std::string_view text = c + row_field_offset_ < fields_.size() ? trim(fields_[c + row_field_offset_])
                                                                          : std::string_view{};
      r.impossible.record(metrics_[static_cast<std::size_t>(col.slot)], v, text,
                          fmt::format("line {}, field '{}'", line_no_, printable(col.name)));
      v = kNaN;
    }
  }
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
// Building the Trace

Trace TraceParser::finish_document(std::string_view json) {
  format_ = TraceFormat::kQueryRangeJson;
  line_no_ = 1;
  query_range_document(json);
  if (pivot_.empty() && ignored_names_.empty())
    fail(1, "result", "the answer holds no samples (an empty result: the query matched no series in the range)");
  return finish();
}

Trace TraceParser::finish() {
  if (format_ == TraceFormat::kExposition) exposition_flush_scrape();
  if (!pivot_.empty() || !pivot_host_.empty()) pivot_commit();
  if (!ignored_names_.empty())
    warn_once(fmt::format("ignored {} metrics epochcast has no channel for: {}", to_string(format_),
                          detail::name_list(ignored_names_)));
  const bool by_sample = format_ == TraceFormat::kExposition || format_ == TraceFormat::kMlflow ||
                         format_ == TraceFormat::kQueryRangeJson;
  if (by_sample && rows_accepted_ == 0 && line_no_ > 0) {
    if (!ignored_names_.empty())
      fail(1, "(metric)", fmt::format("no metric epochcast reads (only {}); for dcgm-exporter expect DCGM_FI_DEV_GPU_UTIL, "
                                      "DCGM_FI_DEV_POWER_USAGE, …",
                                      detail::name_list(ignored_names_, 8)));
    fail(1, "(data)", format_ == TraceFormat::kMlflow ? "header only: no data rows" : "no samples");
  }
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
                                     gpus_.size(), detail::name_list(listed, 16), gpus_[sel].id.index,
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
      // Place the sample one interval after the last (exactly: raw + (prev - raw) can round
      // below prev, and a time axis going back by 1e-17 s breaks monotonicity).
      const double rebased = prev + last_dt;
      offset += rebased - raw;
      raw = rebased;
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
  if (!have_timestamps_) {
    const bool from_log = format_ == TraceFormat::kDcgmi && dmon_interval_s_ > 0;
    d.interval_s = no_timestamp_interval_s();
    d.time_axis = options_.interval_s || from_log ? TimeAxis::kStatedInterval : TimeAxis::kAssumedInterval;
    const std::string what = format_ == TraceFormat::kDcgmi        ? "dcgmi dmon prints no timestamps"
                             : format_ == TraceFormat::kSmiDmon    ? "nvidia-smi dmon without -o T prints no time"
                             : format_ == TraceFormat::kExposition ? "the scrapes carry no timestamps"
                                                                   : "no timestamp column";
    // The guess changes every period and price: it leads the warnings.
    std::string w = fmt::format("{}: samples assumed {:g} s apart ({})", what, d.interval_s,
                                options_.interval_s ? "as given"
                                : from_log          ? "from the -d option in the log"
                                                    : "a guess: nothing states the interval; pass --interval S");
    d.warnings.insert(d.warnings.begin(), std::move(w));
    t.start_unix_s = 0;
  }
  const double median = t.median_interval_s();
  if (median > 0)
    for (std::size_t i = 1; i < n; ++i)
      if (t.time_s[i] - t.time_s[i - 1] > 3 * median) ++d.gaps;
  if (d.gaps) d.warnings.push_back(fmt::format("{} gap(s) longer than 3x the median interval", d.gaps));

  for (double m : epoch_markers_) {
    const double at = m - g.stamp_s[0];
    if (at >= 0 && at <= t.time_s.back() + 1e-9) t.epoch_markers_s.push_back(at);
  }
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
  missing -= std::min<std::size_t>(missing, g.impossible.total());  // said below, with their place
  if (missing)
    d.warnings.push_back(fmt::format("{} missing value(s) ([N/A], [Not Supported], N/A or empty) read as NaN", missing));
  g.impossible.report(file_, t);
  return t;
}

}  // namespace epochcast
