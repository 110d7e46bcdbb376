// Trace readers: nvidia-smi CSV, dcgmi dmon logs, epochcast's canonical CSV, and host CSVs
// merged onto a GPU trace. All streaming, line by line; format detected from content.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "epochcast/core/metric.hpp"
#include "epochcast/trace/trace.hpp"

namespace epochcast {

enum class TraceFormat {
  kAuto,
  kNvidiaSmi,       // nvidia-smi --query-gpu=… --format=csv
  kDcgmi,           // dcgmi dmon
  kCanonical,       // epochcast's own CSV
  kSmiDmon,         // nvidia-smi dmon [-s pucm] [-o DT]
  kExposition,      // Prometheus text exposition: dcgm-exporter /metrics scrapes (one or many appended)
  kDcgmCsv,         // a wide CSV whose columns are dcgm-exporter names (DCGM_FI_DEV_GPU_UTIL, …)
  kGrafanaCsv,      // Grafana panel "Download CSV"
  kQueryRangeJson,  // a saved Prometheus /api/v1/query_range answer
  kWandb,           // Weights & Biases system metrics (system.gpu.0.gpu, …) exported to CSV
  kMlflow,          // MLflow metric history (key,value,timestamp,step) with system/gpu_0_… keys
};

// "auto", "nvidia-smi", "dcgmi", "canonical", "nvidia-smi-dmon", "prometheus-text", "dcgm-csv",
// "grafana-csv", "query-range-json", "wandb", "mlflow".
[[nodiscard]] const char* to_string(TraceFormat format);
// Parses to_string's names and "smi", "dmon", "csv", "smi-dmon", "metrics", "grafana", "json".
[[nodiscard]] std::optional<TraceFormat> trace_format_from_string(std::string_view name);

struct ReadOptions {
  TraceFormat format = TraceFormat::kAuto;
  // Select a GPU index among interleaved GPUs; default: the busiest, with a warning naming all.
  std::optional<int> gpu;
  // Field list (nvidia-smi --query-gpu names) for csv,noheader logs.
  std::vector<std::string> smi_fields;
  // Skip bad data rows (counted in diagnostics) instead of failing. Header errors still fail.
  bool lenient = false;
  // Optional host CSV (timestamp,cpu_util_pct,mem_used_mib) merged onto the GPU time axis.
  std::string host_path;
  // Sampling interval for sources without timestamps (plain dcgmi dmon); default: the `-d`
  // value in a comment of the log, else 1 s (with a warning).
  std::optional<double> interval_s;
  // Called after each chunk read from a file (bytes so far, file size or 0 when unknown), so a
  // front end can show progress on long reads. Not called by read_trace_from_string.
  std::function<void(std::uint64_t done_bytes, std::uint64_t total_bytes)> progress;
  // Most bytes read_trace takes from a stream (stdin, a pipe or FIFO, a device: anything but a
  // regular file) before it gives up with Error(kIo): a trace is read whole before it is analysed,
  // so an endless stream (`yes … | epochcast info -`) would fill memory. 0: the
  // EPOCHCAST_MAX_STREAM_BYTES environment variable if set, else kDefaultMaxStreamBytes.
  std::uint64_t max_stream_bytes = 0;
};

// 4 GiB: a trace of that size takes a few GiB of memory once read (docs/errors.md).
inline constexpr std::uint64_t kDefaultMaxStreamBytes = std::uint64_t{4} << 30;

// Reads a whole trace, streaming the file through a fixed buffer. "-" reads stdin.
// Throws Error(kIo) when the file cannot be read, Error(kParse) with file:line:column and field
// for malformed content, Error(kNotFound) when ReadOptions::gpu names a GPU the file lacks.
[[nodiscard]] Trace read_trace(const std::string& path, const ReadOptions& options = {});
// The same from memory; `name` is used as the file name in messages and Trace::source.
[[nodiscard]] Trace read_trace_from_string(std::string_view content, const std::string& name,
                                           const ReadOptions& options = {});
// A host CSV (timestamp,cpu_util_pct,mem_used_mib) from memory, for merge_host_trace; `name`
// as above. For the HTTP API, where the host log arrives as a second part of the upload.
[[nodiscard]] Trace read_host_trace_from_string(std::string_view content, const std::string& name);

// Recognises the format from the first lines of content; kAuto when it is none of ours.
[[nodiscard]] TraceFormat detect_format(std::string_view head);

// Merges a host trace (channels kHostCpuUtil, kHostMemUsed) onto `gpu`'s time axis: each GPU
// sample takes the nearest host sample within 2 host intervals, else NaN.
void merge_host_trace(Trace& gpu, const Trace& host);

class TraceParser;  // private

// For `detect --follow` and live collection: feed appended bytes, get rows as they complete.
// A line is parsed once its '\n' arrives; a partial last line waits for the next feed.
class IncrementalTraceReader {
 public:
  explicit IncrementalTraceReader(std::string name, ReadOptions options = {});
  ~IncrementalTraceReader();
  IncrementalTraceReader(IncrementalTraceReader&&) noexcept;
  IncrementalTraceReader& operator=(IncrementalTraceReader&&) noexcept;

  // Returns the number of data rows accepted from the lines this call completed.
  std::size_t feed(std::string_view bytes);
  // The trace so far (rebuilt from the rows when new rows arrived since the last call).
  [[nodiscard]] const Trace& trace() const;
  [[nodiscard]] std::size_t rows() const;

 private:
  std::unique_ptr<TraceParser> parser_;
  std::string partial_;
  mutable Trace trace_;
  mutable bool dirty_ = true;
};

// Canonical CSV writer (docs/canonical-csv.md) used by `collect`: streaming, row by row.
class CanonicalCsvWriter {
 public:
  CanonicalCsvWriter(std::ostream& out, std::vector<Metric> columns, bool with_identity = true);
  void write_header(const GpuIdentity& gpu);
  // `values` in `columns` order, in canonical units; NaN is written as an empty cell.
  void write_row(double unix_s, const GpuIdentity& gpu, std::span<const double> values);

 private:
  std::ostream& out_;
  std::vector<Metric> columns_;
  bool with_identity_;
  std::string line_;
};

void write_canonical_csv(const Trace& trace, std::ostream& out);

// Formats Unix seconds as ISO-8601 UTC with milliseconds: "2026-11-30T15:22:53.672Z".
[[nodiscard]] std::string format_iso8601_utc(double unix_s);

}  // namespace epochcast
