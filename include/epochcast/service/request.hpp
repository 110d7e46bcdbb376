// What a front end asks the service for: one plain struct per operation, in the service's own
// vocabulary. validate() checks every field and throws FieldError naming the field (the struct
// member's name), never a flag or a query parameter: each front end words the error in its own
// syntax (the CLI as `--epoch-s …`, the server as `query parameter 'epoch_s': …`).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "epochcast/core/error.hpp"

namespace epochcast {

// Error(kInvalidArgument) about one request field. what(): "<field> <problem>".
class FieldError : public Error {
 public:
  FieldError(std::string field, std::string problem);
  [[nodiscard]] const std::string& field() const { return field_; }
  // The message without the field: "must be at least 1, got 0".
  [[nodiscard]] const std::string& problem() const { return problem_; }

 private:
  std::string field_;
  std::string problem_;
};

// A Prometheus range as the front ends take it: times and step as text (Unix s, RFC 3339 UTC,
// now-15m; 1, 0.5, 100ms, 1m), parsed by the service.
struct PrometheusSource {
  std::string url;                   // empty: no Prometheus source
  std::vector<std::string> queries;  // PromQL; TAG=EXPR names an expression's channel
  std::string uuid;                  // instead of queries: every dcgm-exporter metric of this GPU
  std::string start;
  std::string end;                   // empty: now
  std::string step = "1";
  bool raw = false;                  // the stored scrapes at their own timestamps
  // Called after each request: (requests done, requests in all); may be empty.
  std::function<void(std::size_t, std::size_t)> on_progress;
};

// Where a trace comes from and how to read it.
struct TraceRequest {
  std::string path;                 // file, "-" for stdin; unused with a Prometheus source
  std::string format = "auto";      // auto, or a trace_format_from_string name (read.hpp)
  std::optional<int> gpu;           // GPU index in a log of several; none: the busiest
  std::string host_path;            // host CSV merged onto the trace; "" = none
  bool lenient = false;             // skip malformed rows (counted) instead of failing
  std::vector<std::string> fields;  // nvidia-smi --query-gpu list of a csv,noheader log
  double interval_s = 0;            // for logs without timestamps; 0: from the log, else 1 s assumed (predict refuses)
  // After each chunk read from a file: (bytes so far, file size or 0); may be empty.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
  PrometheusSource prometheus;

  void validate() const;
};

// Epoch detection's knobs (defaults: the detector's).
struct DetectRequest {
  double min_confidence = 0.5;  // below: found = false, the estimate in the reason
  int min_epochs = 3;           // whole epochs needed in view
  double min_period_s = 0;      // bounds of the period searched, seconds; 0 = no bound
  double max_period_s = 0;
  bool whole_trace = false;     // the whole trace, not only its busy region

  void validate() const;
};

// The longest job key (PredictRequest::job_key): longer than any pod/job name Kubernetes allows (253).
inline constexpr std::size_t kMaxJobKeyBytes = 256;

struct PredictRequest {
  // Catalog id or an nvidia-smi name ("Tesla T4"); empty: from the trace's name column.
  std::string source_gpu;
  // Catalog ids (or nvidia-smi names) to predict for; empty: every GPU of the catalog.
  std::vector<std::string> gpus;
  int epochs = 10;  // N for the cost of N epochs
  // The source's epoch time when known from elsewhere (training log); 0: from detection.
  // Needed when detection abstains; the features then cover the detector's busy region.
  double source_epoch_s = 0;
  // Detection's bar for "found". Lower accepts weaker evidence; the confidence still widens
  // the intervals and is named in the warnings.
  double min_detection_confidence = 0.5;
  // The operator's job key: runs of one key on different GPU types become measured pairs in
  // the job store (docs/store.md). Needs ServiceConfig::store_path.
  std::string job_key;
  // Whether the job store (ServiceConfig::store_path) records this run: kYes every time; kNo
  // for an answer that is not the run's last (watch re-analyses a running job as it grows and
  // records it once it ends); kOnce unless the store already holds a run of the same trace
  // name (Trace::source: watch names each job, so a restarted watcher does not record it twice).
  enum class StoreRecord { kYes, kNo, kOnce };
  StoreRecord store_record = StoreRecord::kYes;
  // The job's precision: auto, fp32, tf32, fp16 or bf16 (docs/predict.md, "Precision"); an
  // unknown word is an error listing the choices.
  std::string precision = "auto";
  // Take the epoch time from the job's own epoch markers in the trace (a W&B `epoch` column, an
  // MLflow `epoch` metric: Trace::epoch_markers_s) instead of detection; detection is still
  // run and reported beside them. Error(kInvalidArgument) when the trace carries fewer than 2.
  bool epochs_from_markers = false;

  void validate() const;
};

// How to fit the stacked model; the defaults are the bundled model's.
struct FitRequest {
  std::string data_path;     // dataset CSV; "": the bundled dataset
  std::string catalog_path;  // GPU catalog CSV; "": the bundled data/gpus.csv
  bool lenient = false;      // skip malformed dataset rows (counted)
  // Fit a dataset that lacks some metric statistic columns (those features missing for every
  // run), with a warning naming them; without it such a dataset is refused, naming them.
  bool allow_missing = false;
  // Job store whose measured pairs join the training pairs (docs/store.md); "": none.
  std::string store_path;
  // Fit settings by name over the defaults, applied in order (the table fit_parameters():
  // docs/parameters.md; "seed" → "7", "kernel_ridge" → "false"). A front end's preset
  // (`--linear-ridge`) adds the pairs it stands for first. validate(): FieldError
  // "parameters.<name>" for a value out of range, "parameters" for a name not in the table.
  std::vector<std::pair<std::string, std::string>> parameters;

  void validate() const;
};

// Cross-validation of the stack: a protocol over one dataset, or fit on it and score another.
struct EvaluateRequest {
  FitRequest fit;              // dataset, catalog and fit options
  std::string protocol = "lomo";  // kfold | lomo | logo (ignored with test_path)
  std::string test_path;       // fit on fit.data_path, score the pairs formed within this CSV

  void validate() const;
};

// A GPU list as the front ends take it ("all", or "t4, a10g"): the ids, trimmed; empty for
// "all" or "". FieldError(field, "'<list>' names no GPU") for one like ",,".
[[nodiscard]] std::vector<std::string> parse_gpu_list(std::string_view list, std::string_view field);

}  // namespace epochcast
