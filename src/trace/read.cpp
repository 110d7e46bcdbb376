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

#include "epochcast/core/error.hpp"
#include "parse_util.hpp"
#include "trace_parser.hpp"

namespace epochcast {

using detail::starts_with_ci;
using detail::trim;

const char* to_string(TraceFormat format) {
  switch (format) {
    case TraceFormat::kAuto: return "auto";
    case TraceFormat::kNvidiaSmi: return "nvidia-smi";
    case TraceFormat::kDcgmi: return "dcgmi";
    case TraceFormat::kCanonical: return "canonical";
  }
  return "auto";
}

std::optional<TraceFormat> trace_format_from_string(std::string_view name) {
  if (name == "auto") return TraceFormat::kAuto;
  if (name == "nvidia-smi" || name == "smi") return TraceFormat::kNvidiaSmi;
  if (name == "dcgmi" || name == "dmon") return TraceFormat::kDcgmi;
  if (name == "csv" || name == "canonical") return TraceFormat::kCanonical;
  return std::nullopt;
}

TraceFormat detect_format(std::string_view head) {
  if (head.size() >= 3 && std::memcmp(head.data(), "\xEF\xBB\xBF", 3) == 0) head.remove_prefix(3);
  bool dmon_hint = false;
  while (!head.empty()) {
    const std::size_t nl = head.find('\n');
    const std::string_view line = trim(head.substr(0, nl));
    head = nl == std::string_view::npos ? std::string_view{} : head.substr(nl + 1);
    if (line.empty()) continue;
    if (starts_with_ci(line, "#Entity") || starts_with_ci(line, "# Entity")) return TraceFormat::kDcgmi;
    if (starts_with_ci(line, "# epochcast-trace")) return TraceFormat::kCanonical;
    if (line[0] == '#') {
      dmon_hint = dmon_hint || line.find("dcgmi") != std::string_view::npos;
      continue;
    }
    // The first line that is not a comment decides.
    if (dmon_hint && (starts_with_ci(line, "ID") || starts_with_ci(line, "GPU "))) return TraceFormat::kDcgmi;
    const std::size_t comma = line.find(',');
    if (comma == std::string_view::npos) return TraceFormat::kAuto;
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

Trace read_stream(const std::string& path, const ReadOptions& options, bool host) {
  const int raw_fd = path == "-" ? 0 : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (raw_fd < 0)
    throw Error(ErrorCode::kIo, fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  FileDescriptor fd(raw_fd);
  TraceParser parser(path == "-" ? "<stdin>" : path, options, host);
  std::uint64_t total = 0, done = 0;
  // A regular file ends; anything else (stdin, a pipe, a FIFO, a device) may not.
  std::uint64_t cap = 0;
  if (struct stat st {}; ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode)) {
    total = static_cast<std::uint64_t>(st.st_size);
    parser.set_size_hint(static_cast<std::size_t>(st.st_size));
  } else {
    cap = stream_cap(options);
  }
  std::unique_ptr<char[]> buffer(new char[kChunkBytes]);
  std::string partial;
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
                              path == "-" ? "<stdin>" : path, byte_count(cap),
                              path == "-" ? "standard input" : "a stream (a pipe, FIFO or device)"));
    feed_lines(parser, partial, buffer.get(), buffer.get() + n);
    done += static_cast<std::uint64_t>(n);
    if (options.progress) options.progress(done, total);
  }
  if (!partial.empty()) parser.line(partial, false);
  return parser.finish();
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
  std::string partial;
  feed_lines(parser, partial, content.data(), content.data() + content.size());
  if (!partial.empty()) parser.line(partial, false);
  return parser.finish();
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
