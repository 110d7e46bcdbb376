#include "epochcast/trace/read.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>
#include <algorithm>

#include "epochcast/core/error.hpp"
#include "parse_util.hpp"
#include "gzip_inflater.hpp"
#include "trace_parser.hpp"

namespace epochcast {

using detail::equals_ci;
using detail::starts_with_ci;
using detail::trim;

const char* to_string(TraceFormat format) {
  switch (format) {
    case TraceFormat::kAuto: return "auto";
    case TraceFormat::kNvidiaSmi: return "nvidia-smi";
    case TraceFormat::kDcgmi: return "dcgmi";
    case TraceFormat::kCanonical: return "canonical";
    case TraceFormat::kSmiDmon: return "nvidia-smi-dmon";
    case TraceFormat::kExposition: return "prometheus-text";
    case TraceFormat::kDcgmCsv: return "dcgm-csv";
    case TraceFormat::kGrafanaCsv: return "grafana-csv";
    case TraceFormat::kQueryRangeJson: return "query-range-json";
    case TraceFormat::kWandb: return "wandb";
    case TraceFormat::kMlflow: return "mlflow";
  }
  return "auto";
}

std::optional<TraceFormat> trace_format_from_string(std::string_view name) {
  if (name == "auto") return TraceFormat::kAuto;
  if (name == "nvidia-smi" || name == "smi") return TraceFormat::kNvidiaSmi;
  if (name == "dcgmi" || name == "dmon") return TraceFormat::kDcgmi;
  if (name == "csv" || name == "canonical") return TraceFormat::kCanonical;
  if (name == "nvidia-smi-dmon" || name == "smi-dmon") return TraceFormat::kSmiDmon;
  if (name == "prometheus-text" || name == "metrics") return TraceFormat::kExposition;
  if (name == "dcgm-csv") return TraceFormat::kDcgmCsv;
  if (name == "grafana-csv" || name == "grafana") return TraceFormat::kGrafanaCsv;
  if (name == "query-range-json" || name == "json") return TraceFormat::kQueryRangeJson;
  if (name == "wandb") return TraceFormat::kWandb;
  if (name == "mlflow") return TraceFormat::kMlflow;
  return std::nullopt;
}

namespace detail {

// The words of a '#' line, after the '#': "# gpu pwr gtemp" -> gpu, pwr, gtemp.
std::vector<std::string_view> comment_words(std::string_view line) {
  std::vector<std::string_view> words;
  std::size_t p = 1;
  while (p < line.size()) {
    while (p < line.size() && is_space(line[p])) ++p;
    std::size_t e = p;
    while (e < line.size() && !is_space(line[e])) ++e;
    if (e > p) words.push_back(line.substr(p, e - p));
    p = e;
  }
  return words;
}

// nvidia-smi dmon / pmon header: "# gpu pwr …", "#Date Time gpu …" (-o DT), "#Time gpu …" (-o T).
// 1 = dmon, 2 = pmon, 0 = neither.
int smi_monitor_header(std::string_view line) {
  if (line.empty() || line[0] != '#') return 0;
  std::vector<std::string_view> w = comment_words(line);
  std::size_t i = 0;
  if (i < w.size() && equals_ci(w[i], "Date")) ++i;
  if (i < w.size() && equals_ci(w[i], "Time")) ++i;
  if (i + 1 >= w.size() || w[i] != "gpu") return 0;
  return w[i + 1] == "pid" ? 2 : 1;
}

// A line before a format's first decisive line: blank, a comment nobody claims, Excel's
// "sep=," (Grafana), or a bare timestamp written between appended scrapes (date +%s.%N).
bool is_preamble(std::string_view t) {
  if (t.empty()) return true;
  if (t[0] == '#')
    return !(starts_with_ci(t, "#Entity") || starts_with_ci(t, "# Entity") || starts_with_ci(t, "# epochcast-trace") ||
             starts_with_ci(t, "# HELP ") || starts_with_ci(t, "# TYPE ") || smi_monitor_header(t) != 0);
  if (t == "sep=," || t == "sep=;") return true;
  return is_bare_timestamp(t);
}

bool is_bare_timestamp(std::string_view t) {
  if (t.empty() || t.find(',') != std::string_view::npos) return false;
  LocalTimeResolver local;
  std::int64_t whole = 0;
  double frac = 0;
  TimeKind kind{};
  return (t[0] >= '0' && t[0] <= '9') && parse_timestamp(t, local, whole, frac, kind);
}

}  // namespace detail

namespace {

// A CSV header's cells, unquoted ("" inside quotes is one "), trimmed.
std::vector<std::string> header_cells(std::string_view line) {
  std::vector<std::string> cells;
  detail::split_csv_cells(line, cells);
  return cells;
}

bool is_dcgm_name(std::string_view c) { return starts_with_ci(c, "DCGM_FI_"); }

}  // namespace

TraceFormat detect_format(std::string_view head) {
  if (head.size() >= 3 && std::memcmp(head.data(), "\xEF\xBB\xBF", 3) == 0) head.remove_prefix(3);
  bool dmon_hint = false, stamp_line = false;
  while (!head.empty()) {
    const std::size_t nl = head.find('\n');
    const std::string_view line = trim(head.substr(0, nl));
    head = nl == std::string_view::npos ? std::string_view{} : head.substr(nl + 1);
    if (line.empty()) continue;
    if (starts_with_ci(line, "#Entity") || starts_with_ci(line, "# Entity")) return TraceFormat::kDcgmi;
    if (starts_with_ci(line, "# epochcast-trace")) return TraceFormat::kCanonical;
    if (starts_with_ci(line, "# HELP ") || starts_with_ci(line, "# TYPE ")) return TraceFormat::kExposition;
    if (detail::smi_monitor_header(line) != 0) return TraceFormat::kSmiDmon;  // pmon: refused by the reader
    if (line[0] == '#') {
      dmon_hint = dmon_hint || line.find("dcgmi") != std::string_view::npos;
      continue;
    }
    if (line == "sep=," || line == "sep=;") continue;
    if (detail::is_bare_timestamp(line)) {
      stamp_line = true;
      continue;
    }
    // The first line that is not a comment decides.
    if (line[0] == '{') return TraceFormat::kQueryRangeJson;
    if (dmon_hint && (starts_with_ci(line, "ID") || starts_with_ci(line, "GPU "))) return TraceFormat::kDcgmi;
    // An exposition sample: NAME{labels} value or NAME value, with a dcgm-exporter name.
    if (is_dcgm_name(line) && line.find(',') == std::string_view::npos) return TraceFormat::kExposition;
    if (is_dcgm_name(line) && line.find('{') != std::string_view::npos &&
        line.find('{') < line.find(',') && line.find('}') != std::string_view::npos &&
        line.find('"') != std::string_view::npos && line.front() != '"')
      return TraceFormat::kExposition;
    (void)stamp_line;
    const std::size_t comma = line.find(',');
    if (comma == std::string_view::npos) return TraceFormat::kAuto;
    const std::vector<std::string> cells = header_cells(line);
    if (cells.empty()) return TraceFormat::kAuto;
    const auto has = [&](auto pred) { return std::any_of(cells.begin(), cells.end(), pred); };
    if (has([](const std::string& c) { return c == "key"; }) && has([](const std::string& c) { return c == "value"; }) &&
        has([](const std::string& c) { return c == "timestamp"; }))
      return TraceFormat::kMlflow;
    if (has([](const std::string& c) { return detail::wandb_gpu_column(c).has_value(); }) ||
        has([](const std::string& c) { return c == "_timestamp" || c == "_runtime"; }))
      return TraceFormat::kWandb;
    if (equals_ci(cells[0], "Time") && cells.size() > 1) return TraceFormat::kGrafanaCsv;
    if (has([](const std::string& c) { return is_dcgm_name(c); })) return TraceFormat::kDcgmCsv;
    std::string_view first = trim(line.substr(0, comma));
    if (first == "timestamp") {
      // nvidia-smi writes ", " between fields, field names with dots, units in brackets;
      // canonical columns are tags from the metric table.
      std::string_view rest = line.substr(comma + 1);
      while (!rest.empty()) {
        const std::size_t c = rest.find(',');
        std::string_view f = trim(rest.substr(0, c));
        rest = c == std::string_view::npos ? std::string_view{} : rest.substr(c + 1);
        const std::size_t bracket = f.find(" [");
        if (bracket != std::string_view::npos) return TraceFormat::kNvidiaSmi;
        if (metric_by_tag(f) || f == "gpu_index" || f == "gpu_uuid" || f == "cpu_util_pct") return TraceFormat::kCanonical;
        if (metric_by_smi_name(f) || f == "index" || f == "name" || f == "uuid") return TraceFormat::kNvidiaSmi;
      }
      return TraceFormat::kAuto;
    }
    if (metric_by_tag(first) || first == "gpu_index" || first == "gpu_uuid" || first == "gpu_name")
      return TraceFormat::kCanonical;
    const std::size_t bracket = first.find(" [");
    if (bracket != std::string_view::npos) first = trim(first.substr(0, bracket));
    if (metric_by_smi_name(first) || first == "index" || first == "name" || first == "uuid")
      return TraceFormat::kNvidiaSmi;
    return TraceFormat::kAuto;
  }
  return TraceFormat::kAuto;
}

namespace {

constexpr std::size_t kChunkBytes = 1 << 20;

// Splits a byte stream into lines for a parser; keeps the unfinished tail in `partial`.
// Returns false when the tail has grown past the line cap (the parser has thrown by then).
void feed_lines(TraceParser& parser, std::string& partial, const char* p, const char* end) {
  while (p < end) {
    const void* hit = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
    if (!hit) {
      partial.append(p, end);
      if (partial.size() > TraceParser::kMaxLineBytes) parser.line_too_long(partial);
      return;
    }
    const char* nl = static_cast<const char*>(hit);
    if (!partial.empty()) {
      partial.append(p, nl);
      if (partial.size() > TraceParser::kMaxLineBytes) parser.line_too_long(partial);
      parser.line(partial, true);
      partial.clear();
    } else {
      if (static_cast<std::size_t>(nl - p) > TraceParser::kMaxLineBytes)
        parser.line_too_long(std::string_view(p, static_cast<std::size_t>(nl - p)));
      parser.line(std::string_view(p, static_cast<std::size_t>(nl - p)), true);
    }
    p = nl + 1;
  }
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ > 2) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

// ReadOptions::max_stream_bytes, else $EPOCHCAST_MAX_STREAM_BYTES, else the default.
std::uint64_t stream_cap(const ReadOptions& options) {
  if (options.max_stream_bytes) return options.max_stream_bytes;
  const char* env = std::getenv("EPOCHCAST_MAX_STREAM_BYTES");
  if (!env || !*env) return kDefaultMaxStreamBytes;
  std::uint64_t v = 0;
  const std::string_view text(env);
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size() || v == 0)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("EPOCHCAST_MAX_STREAM_BYTES='{}': expected a positive whole number of bytes",
                            detail::printable(text)));
  return v;
}

std::string byte_count(std::uint64_t bytes) {
  if (bytes >= (std::uint64_t{1} << 30) && bytes % (std::uint64_t{1} << 30) == 0)
    return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (std::uint64_t{1} << 20) && bytes % (std::uint64_t{1} << 20) == 0)
    return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

// A host CSV is read with default options but the same stream cap.
ReadOptions host_options(const ReadOptions& options) {
  ReadOptions o;
  o.max_stream_bytes = options.max_stream_bytes;
  return o;
}

// Where the bytes go: lines to the parser, or (a JSON document: query_range) one buffer,
// whose size the caller's cap bounds. Decided by the first byte that is not white space.
class TextSink {
 public:
  TextSink(TraceParser& parser, const ReadOptions& options) : parser_(parser), options_(options) {}
  void operator()(const char* p, std::size_t n) {
    if (mode_ == Mode::kUndecided) {
      std::size_t i = 0;
      if (skipped_ == 0 && n >= 3 && std::memcmp(p, "\xEF\xBB\xBF", 3) == 0) i = 3;
      while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n')) ++i;
      skipped_ += i;
      if (i == n && skipped_ < TraceParser::kMaxLineBytes) {
        partial_.append(p, n);  // only white space so far
        return;
      }
      const bool json = i < n && p[i] == '{' &&
                        (options_.format == TraceFormat::kAuto || options_.format == TraceFormat::kQueryRangeJson);
      mode_ = json ? Mode::kDocument : Mode::kLines;
      if (mode_ == Mode::kLines && !partial_.empty()) {
        std::string head = std::move(partial_);
        partial_.clear();
        feed_lines(parser_, partial_, head.data(), head.data() + head.size());
      }
    }
    if (mode_ == Mode::kDocument) {
      if (document_.empty() && reserve_ > 0) document_.reserve(reserve_);
      document_.append(p, n);
    }
    else feed_lines(parser_, partial_, p, p + n);
  }
  // The input's size when known: a JSON document is then held in one allocation.
  void reserve(std::size_t bytes) { reserve_ = bytes; }
  Trace finish() {
    if (mode_ == Mode::kDocument) return parser_.finish_document(document_);
    if (!partial_.empty()) parser_.line(partial_, false);
    return parser_.finish();
  }

 private:
  enum class Mode { kUndecided, kLines, kDocument };
  TraceParser& parser_;
  const ReadOptions& options_;
  Mode mode_ = Mode::kUndecided;
  std::size_t skipped_ = 0, reserve_ = 0;
  std::string partial_, document_;
};

Trace read_stream(const std::string& path, const ReadOptions& options, bool host) {
  const int raw_fd = path == "-" ? 0 : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (raw_fd < 0)
    throw Error(ErrorCode::kIo, fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  FileDescriptor fd(raw_fd);
  const std::string name = path == "-" ? "<stdin>" : path;
  TraceParser parser(name, options, host);
  std::uint64_t total = 0, done = 0;
  // A regular file ends; anything else (stdin, a pipe, a FIFO, a device) may not.
  std::uint64_t cap = 0;
  bool regular = false;
  if (struct stat st {}; ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode)) {
    regular = true;
    total = static_cast<std::uint64_t>(st.st_size);
    parser.set_size_hint(static_cast<std::size_t>(st.st_size));
  } else {
    cap = stream_cap(options);
  }
  std::unique_ptr<char[]> buffer(new char[kChunkBytes]);
  TextSink sink(parser, options);
  if (regular) sink.reserve(static_cast<std::size_t>(total));
  std::unique_ptr<detail::GzipInflater> gzip;  // a .gz log, recognised by its magic bytes
  bool first = true;
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer.get(), kChunkBytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorCode::kIo, fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
    }
    if (n == 0) break;
    if (cap && done + static_cast<std::uint64_t>(n) > cap)
      throw Error(ErrorCode::kIo,
                  fmt::format("{}: more than {} read from {} without reaching its end: a trace is read whole before "
                              "it is analysed, so an endless stream would fill memory. Save the log to a file "
                              "(`detect --follow FILE` follows one that grows), or raise the cap with "
                              "EPOCHCAST_MAX_STREAM_BYTES",
                              name, byte_count(cap),
                              path == "-" ? "standard input" : "a stream (a pipe, FIFO or device)"));
    const std::string_view bytes(buffer.get(), static_cast<std::size_t>(n));
    if (first) {
      first = false;
      if (detail::is_gzip(bytes)) {
        // The text is what is capped: a 1 KB file may inflate to gigabytes.
        gzip = std::make_unique<detail::GzipInflater>(name, stream_cap(options));
        parser.set_size_hint(0);
      }
    }
    if (gzip) gzip->feed(bytes, sink);
    else sink(bytes.data(), bytes.size());
    done += static_cast<std::uint64_t>(n);
    if (options.progress) options.progress(done, total);
  }
  if (gzip) gzip->finish();
  return sink.finish();
}

}  // namespace

Trace read_trace(const std::string& path, const ReadOptions& options) {
  Trace trace = read_stream(path, options, false);
  if (!options.host_path.empty()) merge_host_trace(trace, read_stream(options.host_path, host_options(options), true));
  return trace;
}

namespace {

Trace parse_string(std::string_view content, const std::string& name, const ReadOptions& options, bool host) {
  TraceParser parser(name, options, host);
  parser.set_size_hint(content.size());
  // A JSON document already in memory is parsed where it lies (the sink would copy it whole).
  if (const std::size_t first = content.find_first_not_of(" \t\r\n");
      first != std::string_view::npos && content[first] == '{' && !detail::is_gzip(content) &&
      (options.format == TraceFormat::kAuto || options.format == TraceFormat::kQueryRangeJson))
    return parser.finish_document(content);
  TextSink sink(parser, options);
  if (detail::is_gzip(content)) {
    detail::GzipInflater gzip(name, stream_cap(options));
    gzip.feed(content, sink);
    gzip.finish();
  } else {
    sink(content.data(), content.size());
  }
  return sink.finish();
}

}  // namespace

Trace read_host_trace_from_string(std::string_view content, const std::string& name) {
  return parse_string(content, name, ReadOptions{}, true);
}

Trace read_trace_from_string(std::string_view content, const std::string& name, const ReadOptions& options) {
  Trace trace = parse_string(content, name, options, false);
  if (!options.host_path.empty()) merge_host_trace(trace, read_stream(options.host_path, ReadOptions{}, true));
  return trace;
}

void merge_host_trace(Trace& gpu, const Trace& host) {
  if (gpu.time_s.empty() || host.time_s.empty()) return;
  const double host_interval = host.median_interval_s() > 0 ? host.median_interval_s() : 1.0;
  const double tolerance_s = 2 * host_interval;
  std::size_t unmatched = 0;
  for (const Channel& hc : host.channels) {
    if (!info(hc.metric).host) continue;  // never a GPU channel from the host file
    Channel& out = gpu.channel(hc.metric);
    std::size_t j = 0;
    unmatched = 0;
    for (std::size_t i = 0; i < gpu.time_s.size(); ++i) {
      const double t = gpu.start_unix_s + gpu.time_s[i];
      // Advance to the last host sample at or before t; compare it with the next one.
      while (j + 1 < host.time_s.size() && host.start_unix_s + host.time_s[j + 1] <= t) ++j;
      std::size_t best = j;
      const double dj = std::abs(host.start_unix_s + host.time_s[j] - t);
      if (j + 1 < host.time_s.size() && std::abs(host.start_unix_s + host.time_s[j + 1] - t) < dj) best = j + 1;
      const double dist = std::abs(host.start_unix_s + host.time_s[best] - t);
      if (dist <= tolerance_s) {
        out.values[i] = hc.values[best];
      } else {
        out.values[i] = std::numeric_limits<double>::quiet_NaN();
        ++unmatched;
      }
    }
  }
  if (unmatched == gpu.time_s.size()) {
    gpu.diagnostics.warnings.push_back(fmt::format(
        "host CSV '{}' does not overlap the GPU trace in time; host channels are empty", host.source));
  } else if (unmatched > 0) {
    gpu.diagnostics.warnings.push_back(fmt::format(
        "{} GPU samples have no host sample within {:.3g} s (host channels NaN there)", unmatched, tolerance_s));
  }
  for (const auto& w : host.diagnostics.warnings)
    gpu.diagnostics.warnings.push_back(fmt::format("host CSV: {}", w));
  gpu.diagnostics.impossible_values += host.diagnostics.impossible_values;
}

// ---------------------------------------------------------------------------------------------

IncrementalTraceReader::IncrementalTraceReader(std::string name, ReadOptions options)
    : parser_(std::make_unique<TraceParser>(std::move(name), std::move(options), false)) {}
IncrementalTraceReader::~IncrementalTraceReader() = default;
IncrementalTraceReader::IncrementalTraceReader(IncrementalTraceReader&&) noexcept = default;
IncrementalTraceReader& IncrementalTraceReader::operator=(IncrementalTraceReader&&) noexcept = default;

std::size_t IncrementalTraceReader::feed(std::string_view bytes) {
  const std::uint64_t before = parser_->rows();
  feed_lines(*parser_, partial_, bytes.data(), bytes.data() + bytes.size());
  const std::uint64_t added = parser_->rows() - before;
  if (added) dirty_ = true;
  return static_cast<std::size_t>(added);
}

const Trace& IncrementalTraceReader::trace() const {
  if (dirty_) {
    trace_ = parser_->build();
    dirty_ = false;
  }
  return trace_;
}

std::size_t IncrementalTraceReader::rows() const { return static_cast<std::size_t>(parser_->rows()); }

}  // namespace epochcast
