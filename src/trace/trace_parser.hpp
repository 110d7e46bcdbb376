// TraceParser: the line-at-a-time engine behind every reader. It detects the format from the
// first lines, parses rows into per-GPU column stores, and builds a Trace on demand.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "epochcast/core/error.hpp"
#include "epochcast/trace/read.hpp"
#include "parse_util.hpp"

namespace epochcast {

class TraceParser {
 public:
  // `host` reads a host CSV: columns cpu_util_pct / mem_used_mib map to the host metrics.
  TraceParser(std::string name, ReadOptions options, bool host = false);

  // One line without its '\n'. `terminated` is false for a last line that had no newline:
  // if it does not parse it is dropped as cut mid-write (counted, warned), never an error.
  void line(std::string_view text, bool terminated);
  // A line grew past the line-length cap without a newline: always an error.
  [[noreturn]] void line_too_long(std::string_view start);

  [[nodiscard]] std::uint64_t rows() const { return rows_accepted_; }
  // The input's size when known, to reserve the column stores once.
  void set_size_hint(std::size_t bytes) { size_hint_bytes_ = bytes; }
  // The trace from the rows so far; empty (no samples) before the first row.
  [[nodiscard]] Trace build() const { return build_impl(false); }
  // End of input: a file without any data row is an error; else build().
  [[nodiscard]] Trace finish();
  // A whole JSON document (a saved query_range answer) instead of lines; then finish().
  [[nodiscard]] Trace finish_document(std::string_view json);

  static constexpr std::size_t kMaxLineBytes = 1 << 20;

  // Samples that arrive one value at a time (metric, GPU, time): kept, sorted by GPU and time at
  // the end and committed as rows (pivot.cpp). Used by the exposition, MLflow and JSON readers.
  struct PivotSample {
    int gpu;
    std::int64_t time_us;  // microseconds since base_s_
    int slot;
    double value;
  };

 private:
  enum class ColumnKind : std::uint8_t { kTimestamp, kIndex, kName, kUuid, kMetric, kIgnored, kDate, kTime };
  struct Column {
    ColumnKind kind = ColumnKind::kIgnored;
    std::string name;          // as the header spells it, for messages
    int slot = -1;             // index into metrics_ for kMetric
    std::string canonical_unit;
    double header_factor = 1;  // unit in the header (or units row) -> canonical
    std::string header_unit;
    int values_have_units = -1;  // nvidia-smi: -1 unknown, 0 no, 1 yes (decided on first row)
    std::string last_value_unit;  // cache: last unit seen in a value and its factor
    double last_value_factor = 1;
    std::uint32_t start = 0;   // dcgmi: byte offset of the column in the header line
    double min_value = 0, max_value = 0;  // kMetric: the metric's physical limits (metric table)
  };
  struct GpuRows {
    GpuIdentity id;
    std::string first_stamp;
    std::vector<double> stamp_s;
    std::vector<std::vector<double>> values;  // per slot
    std::uint64_t ticks = 0;                  // rows seen (stored or not)
    double busy_sum = 0;                      // sum of utilization (or power) for "busiest"
    std::uint64_t busy_n = 0;
    ImpossibleValues impossible;              // readings outside the metric's limits (stored NaN)
  };

  // `steal`: move the column stores into the Trace (finish() only; the parser is spent after).
  Trace build_impl(bool steal) const;
  [[noreturn]] void fail(std::size_t column, std::string_view field, const std::string& message) const;
  [[noreturn]] void fail_at(std::string_view line, std::string_view at, std::string_view field,
                            const std::string& message) const;
  // A data row must hold one field per column of `cols` from fields_[offset] on: else the
  // error names the first missing column, or points at the first extra field.
  void check_field_count(std::string_view text, std::size_t offset, const std::vector<Column>& cols) const;
  void dispatch(std::string_view text);
  void detect_and_replay();
  void warn_once(const std::string& message);
  void skip_row(std::string reason, std::uint64_t line);

  // nvidia-smi CSV
  bool looks_like_smi_header(std::string_view text) const;
  void smi_header(std::string_view text, bool from_fields);  // all or nothing
  void smi_header_impl(std::string_view text, bool from_fields);
  void smi_row(std::string_view text);
  double smi_value(Column& col, std::string_view text, std::string_view field);
  double converted(double v, double factor, const Column& col, std::string_view line, std::string_view at,
                   std::string_view value) const;
  // dcgmi dmon
  void dmon_line(std::string_view text);
  void dmon_header(std::string_view text);
  void dmon_units(std::string_view text);
  void dmon_row(std::string_view text);
  // canonical CSV
  void canonical_line(std::string_view text);
  void canonical_header(std::string_view text);
  void canonical_row(std::string_view text);

  // nvidia-smi dmon (smi_dmon_reader.cpp); pmon is recognised and refused there
  void smi_dmon_line(std::string_view text);
  void smi_dmon_header(std::string_view names, std::string_view units);
  void smi_dmon_row(std::string_view text);
  // Prometheus text exposition: dcgm-exporter /metrics scrapes, appended (exposition_reader.cpp)
  void exposition_line(std::string_view text);
  void exposition_flush_scrape();
  // Wide CSVs whose column names carry metric and GPU: DCGM_FI_* CSV, Grafana, W&B (wide_csv_reader.cpp)
  void wide_line(std::string_view text);
  void wide_header(std::string_view text);
  void wide_row(std::string_view text);
  // MLflow metric history: key,value,timestamp,step (mlflow_reader.cpp)
  void mlflow_line(std::string_view text);
  // A saved Prometheus query_range answer (query_range_reader.cpp): one JSON document
  void query_range_document(std::string_view json);
  // What a file of a known foreign kind is and how to log what epochcast reads; "" if unknown (recognise.cpp).
  static std::string recognise_foreign(std::string_view first_line);

  int pivot_slot(Metric m, std::string_view source_name);
  void pivot_add(int gpu, std::int64_t time_us, int slot, double value);
  void pivot_identity(int gpu, std::string_view name, std::string_view uuid);
  void pivot_commit();
  // Unix seconds as a stamp relative to base_s_ (absolute time kind; the first sets the base).
  double unix_stamp(double unix_s);
  // Wide rows: one row_ per GPU named in the header, committed GPU by GPU.
  struct WideColumn {
    int gpu = -1;       // -1: a column of every GPU's row (host metrics) or of the one GPU
    int slot = -1;
    int marker = 0;     // 1: the job's epoch counter (W&B `epoch`): a change is an epoch boundary
    bool ms = false;    // timestamp column in milliseconds
  };
  void wide_resolve_columns(const std::vector<std::string>& names);
  void note_epoch_marker(double value, double stamp);

  int add_metric_slot(Metric m, std::string_view column_name);
  // A parsed value on its way into row_: "-0" becomes 0, and one outside the metric's physical
  // limits marks the row for commit_row (NaN compares false: missing already).
  double checked(const Column& col, double v) {
    v += 0.0;
    impossible_in_row_ |= (v < col.min_value) | (v > col.max_value);
    return v;
  }
  void set_column_limits();
  // Grid step of a log without timestamps: --interval, else the log's own (dcgmi -d), else the guess.
  double no_timestamp_interval_s() const;
  // The stamp of an untimed row of `gpu_index`: its rows so far × the stated (or assumed) interval.
  double untimed_stamp(int gpu_index) const;
  // The current line's cells into fields_ (text::CsvSplitter; `quotes`: RFC 4180 quoting); a
  // quote left open is an error naming its column.
  void split_csv(std::string_view text, bool quotes);
  double parse_stamp(std::string_view text, std::string_view field, std::string_view line);
  void commit_row(int gpu_index, std::string_view name, std::string_view uuid, double stamp_s,
                  std::string_view stamp_text);

  std::string file_;
  ReadOptions options_;
  bool host_;
  TraceFormat format_;
  bool header_done_ = false;
  std::uint64_t line_no_ = 0;
  std::uint64_t rows_accepted_ = 0;
  std::vector<std::pair<std::uint64_t, std::string>> pending_;  // lines before detection
  std::vector<Column> columns_;
  std::vector<Metric> metrics_;  // slot -> metric
  mutable std::vector<GpuRows> gpus_;  // mutable: finish() moves the stores out
  std::size_t last_gpu_ = 0;
  std::vector<double> row_;                 // parsed values of the current row, per slot
  std::size_t row_field_offset_ = 0;        // fields_[column + this]: the column's text (dmon: after "GPU N")
  bool impossible_in_row_ = false;          // a value of the current row is outside its limits
  text::CsvSplitter splitter_;              // the one CSV splitter (core/text)
  std::vector<std::string_view> fields_;    // split fields of the current line
  std::string header_text_;                 // to recognise a repeated header
  std::string units_text_;
  bool have_timestamps_ = true;
  bool time_kind_set_ = false;
  detail::TimeKind time_kind_ = detail::TimeKind::kUnix;
  detail::LocalTimeResolver local_time_;
  bool base_set_ = false;
  std::int64_t base_s_ = 0;  // whole seconds of the first timestamp; stamps are stored relative to it
  double dmon_interval_s_ = 0;   // from a "-d MS" comment
  std::string meta_gpu_name_, meta_gpu_uuid_;
  int meta_gpu_index_ = -1;
  std::uint64_t missing_values_ = 0;  // [N/A], [Not Supported], N/A, empty cells
  std::uint64_t repeated_headers_ = 0;
  std::uint64_t skipped_entities_ = 0;
  TraceDiagnostics diag_;
  int busy_slot_ = -1;               // slot of utilization (else power); metrics_.size() if none
  std::size_t size_hint_bytes_ = 0;
  std::size_t row_bytes_ = 0;        // length of the current data line (for the reserve estimate)
  bool moved_out_ = false;           // finish() moved the stores into the Trace
  // new formats
  std::vector<PivotSample> pivot_;
  std::vector<PivotSample> pivot_host_;     // host samples, merged into every GPU's row at the same time
  std::vector<std::pair<int, std::pair<std::string, std::string>>> pivot_ids_;  // gpu -> name, uuid
  std::vector<std::pair<int, Metric>> pivot_slot_of_;                         // metric -> slot
  std::vector<std::string> ignored_names_;  // source names without a metric (warned once, listed)
  std::vector<WideColumn> wide_;            // per CSV column
  std::vector<Column> wide_kinds_;          // per CSV column: what it holds (time, identity, metric)
  std::vector<int> wide_gpus_;              // GPUs of a wide header, in first-seen order
  std::vector<std::pair<int, std::pair<std::string, std::string>>> wide_ids_;
  std::vector<double> wide_row_;            // per column: parsed value (NaN missing)
  std::string smi_dmon_names_;              // the "# gpu pwr …" header line, to see a repeat
  bool pending_units_ = false;              // nvidia-smi dmon: the units line comes next
  bool exposition_stamp_set_ = false;       // a timestamp line (date +%s.%N) opened this scrape
  double exposition_stamp_ = 0;
  std::string exposition_stamp_text_;
  std::uint64_t exposition_scrapes_ = 0;
  bool stamped_scrapes_ = false;            // scrapes are timed by timestamp lines
  std::vector<std::pair<int, std::uint64_t>> exposition_seen_;  // (gpu, slot bit set) in the scrape
  std::vector<double> epoch_markers_;       // stamps (relative to base_s_) where the job's epoch counter changed
  double last_marker_value_ = -1;
  std::size_t mlflow_width_ = 0;
  int mlflow_key_ = -1, mlflow_value_ = -1, mlflow_time_ = -1, mlflow_step_ = -1;
};

}  // namespace epochcast
