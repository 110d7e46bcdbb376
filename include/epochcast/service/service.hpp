// The one door both front ends (CLI, server) use. Every rule of "trace in, answer out" lives
// behind it; the front ends parse their own syntax into the request structs of request.hpp,
// call, and render what comes back (render.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "epochcast/epoch/segmentation.hpp"
#include "epochcast/model/dataset.hpp"
#include "epochcast/model/evaluate.hpp"
#include "epochcast/model/fit_parameters.hpp"
#include "epochcast/model/public_eval.hpp"
#include "epochcast/model/scaling_prior.hpp"
#include "epochcast/store/store_eval.hpp"
#include "epochcast/model/stacked_model.hpp"  // ProgressFn
#include "epochcast/service/jobs.hpp"
#include "epochcast/service/report.hpp"
#include "epochcast/service/request.hpp"
#include "epochcast/trace/trace.hpp"

namespace epochcast {

struct ServiceConfig {
  std::string model_path;        // empty: the default model fitted from the bundled dataset
  std::string gpu_catalog_path;  // empty: data/gpus.csv of the bundled data
  std::string prices_path;       // empty: data/prices.csv of the bundled data
  ProgressFn progress;           // (stage, done, total) on long work; may be empty
  // The job store (docs/store.md): when set, every predicted run is recorded there and the
  // store's per GPU pair calibration is applied. Opened (created) for writing.
  std::string store_path;
  // Answers name this machine's files by base name only (serve: clients must not learn paths).
  bool hide_paths = false;
};

// Time spent per stage of one predict, for the benchmark and --verbose.
struct StageTimes {
  double read_s = 0;
  double detect_s = 0;
  double features_s = 0;
  double model_s = 0;            // all target GPUs
  double render_s = 0;           // filled by callers that render
};

// What `fit` made: the model (already written to the output path when one was given) and what
// loading and fitting took.
struct FitResult {
  StackedModel model;
  Dataset dataset;
  double seconds = 0;        // wall clock of the fit
  double cpu_seconds = 0;    // process CPU time, all threads
  double interval_level = 0.9;
  ModelValidation validation;  // whether the bundled held-out figures describe this model
  // With FitRequest::store_path: the store's measured pairs added (directed, counted
  // before the weight), the store row ids they came from ("3, 5-9"), and the refused pairs' reasons.
  std::size_t store_pairs = 0;
  std::string store_rows;
  std::vector<std::string> store_refused;
  // Store pairs of GPU pairs the bundled data already holds: calibration only (store/pairs.hpp,
  // kHeldGpuPairMinPairs), and the note that names them ("" when none).
  std::size_t store_calibration_only = 0;
  std::string store_calibration_only_note;
  // What the front end must say aloud: the statistic columns fitted without (allow_missing),
  // those of the bundled dataset's that the dataset lacks.
  std::vector<std::string> warnings;
  std::vector<std::string> missing_columns;
};

// What `evaluate` measured, with the datasets it read (their diagnostics: rows skipped,
// impossible values) and the fingerprint `fit` on the same data records in its model.
struct PublicEvaluation {
  PublicTable table;
  PublicEvalReport report;
  ScalingPrior fitted_on_all;  // the prior fitted on every GPU of the table
};

struct EvaluateResult {
  EvalReport report;
  Dataset dataset;
  std::optional<Dataset> test;
  std::string data_fingerprint;
  std::vector<std::string> warnings;  // as FitResult's (allow_missing)
};

// The bundled held-out figures (data/model-validation.json) when they belong to `model`: same
// schema, pair count and fit options, and fitted on the bundled dataset and catalog (its data
// fingerprint); else none, with a note saying why and how to measure them (`epochcast eval`).
[[nodiscard]] ModelValidation bundled_validation(const StackedModel& model);

// Which model answers now (serve's GET /v1/model).
struct ModelInfo {
  std::string label;       // "default (fitted from the bundled dataset)", the file name, "refit 1 …"
  std::string version;     // model_version(): v5/<schema hash>/<data fingerprint>
  std::string trained_on;  // the model's dataset_source(): names the store rows it learned from
  std::size_t generation = 0;  // 0: loaded at start; n: the n-th refit
};

// What Service::refit did.
struct RefitResult {
  ModelInfo model, previous;
  std::size_t store_pairs = 0;          // directed measured pairs added (before the weight)
  std::string store_rows;               // store row ids ("3, 5-9")
  std::vector<std::string> refused;     // reasons, one per refused pair
  std::size_t calibration_only = 0;     // directed pairs of GPU pairs the bundled data holds: not refitted
  double seconds = 0;                   // the fit
  std::string model_file;               // where it was written; "" when not asked
};

class Service {
 public:
  // Keeps the configuration; the catalogs and the model load on first use (load()).
  explicit Service(ServiceConfig config = {});
  ~Service();
  Service(Service&&) noexcept;
  Service& operator=(Service&&) noexcept;

  // Loads the catalogs and the model now (fitting the default model on first use; shows
  // progress). Idempotent. Throws Error(kIo/kParse/kSchemaMismatch/kNotFound) for a bad model,
  // GPU or price catalog file. Front ends that serve call it before they listen.
  void load() const;

  // Reads the trace a request names (file, stdin or Prometheus range; the host log merged).
  [[nodiscard]] Trace read(const TraceRequest& request) const;
  // The same from bytes already in memory (an upload); `host` is the host log's bytes.
  [[nodiscard]] Trace read(std::string_view bytes, const std::string& name, const TraceRequest& request,
                           std::optional<std::string_view> host = std::nullopt,
                           const std::string& host_name = "host") const;

  // Epoch detection with the project's detector. Needs no model.
  [[nodiscard]] Segmentation detect(const Trace& trace, const DetectRequest& request = {}) const;

  // Trace → ranked prediction for every requested GPU. Throws Error(kNotFound) for an unknown
  // source or target GPU (the message lists the catalog), FieldError for a bad request field.
  // When no epochs are found the report carries no predictions and a warning saying why.
  [[nodiscard]] PredictReport predict(const Trace& trace, const PredictRequest& request,
                                      StageTimes* times = nullptr) const;
  // Reads the file first.
  [[nodiscard]] PredictReport predict_file(const TraceRequest& read, const PredictRequest& request,
                                           StageTimes* times = nullptr) const;
  // Several traces: one item per trace (each with its sibling host log unless `read` names
  // one); a trace that fails is reported, the rest go on.
  [[nodiscard]] std::vector<BatchItem> predict_batch(const std::vector<std::string>& paths,
                                                     const TraceRequest& read,
                                                     const PredictRequest& request) const;
  // The self-contained HTML page of one prediction (render_html).
  [[nodiscard]] std::string report(const Trace& trace, const PredictRequest& request) const;

  // Fits the stack as the request says and, when `output_path` is not empty, writes it there
  // (checked before fitting: a path that cannot be written fails at once).
  [[nodiscard]] FitResult fit(const FitRequest& request, const std::string& output_path = {}) const;
  // Cross-validates the stack (progress through the config's ProgressFn).
  [[nodiscard]] EvaluateResult evaluate(const EvaluateRequest& request) const;
  // The job store's measured pairs leave-one-job-out: the service's model alone and with the
  // store's calibration from the other jobs (docs/store.md). Errors as JobStore's.
  [[nodiscard]] StoreEvaluation evaluate_store(const std::string& store_path) const;
  // The scaling prior on the public throughput table, one GPU type left out at a time
  // (`eval --protocol public`); `catalog_path` "": the bundled catalog.
  [[nodiscard]] PublicEvaluation evaluate_public(const std::string& catalog_path = {}) const;

  // The job store (docs/store.md; JobsRequest names it). Errors as JobStore's; Error(kNotFound)
  // for a run id or job key the store lacks.
  [[nodiscard]] JobsList jobs_list(const JobsRequest& request) const;
  [[nodiscard]] RunRecord jobs_show(const JobsRequest& request) const;
  // Every run as JSON lines (run_json.hpp); the count written.
  std::size_t jobs_export(const JobsRequest& request, std::ostream& out) const;
  // Adds the runs of an export (`name` in messages: "runs.jsonl:3"); runs already there are skipped.
  JobsImport jobs_import(const JobsRequest& request, std::istream& in, const std::string& name) const;
  // Deletes the request's run, or every run of its job key; the count.
  std::size_t jobs_forget(const JobsRequest& request) const;
  // The measured pairs, the calibration they give this service's model and catalog, and the
  // running error of predictions later checked on their target GPU, per GPU pair.
  [[nodiscard]] JobPairs jobs_pairs(const JobsRequest& request) const;

  // The catalog's GPU ids in catalog order.
  [[nodiscard]] std::vector<std::string> gpu_ids() const;
  // The catalog id of a catalog id or nvidia-smi name ("NVIDIA H100 80GB HBM3"); none when
  // the catalog does not know it.
  [[nodiscard]] std::optional<std::string> catalog_id(std::string_view name) const;

  // A copy: a refit replaces the model it belongs to.
  [[nodiscard]] ModelValidation validation() const;

  // The job store's side of serve (ServiceConfig::store_path; Error(kInvalidArgument) without one).
  [[nodiscard]] ModelInfo model_info() const;
  // Refits the served model's stack (its own fit options) on the bundled dataset plus the
  // store's measured pairs (as `fit --store`), writes it to `model_file` when not empty, and
  // swaps it in atomically: a request in flight finishes on the model it started with, every
  // later one uses the new model with a calibration computed for it. nullopt when a refit is
  // already running. Error(kInvalidArgument) when the store holds no measured pair; the model
  // in use is then unchanged.
  [[nodiscard]] std::optional<RefitResult> refit(const std::string& model_file = {}) const;
  // The running error of the store's checked predictions per GPU pair (jobs pairs, /metrics).
  [[nodiscard]] std::vector<PairPredictionError> prediction_errors() const;
  // Whether runs are recorded in a job store (ServiceConfig::store_path).
  [[nodiscard]] bool has_store() const;
  // The store's runs that can form pairs (a job key and a measured epoch time): their count and
  // largest row id. A refit schedule refits only when this changed.
  [[nodiscard]] std::pair<std::size_t, std::int64_t> store_pairable_runs() const;

  struct Impl;  // src/service/service_impl.hpp: the steps of each operation share it

 private:
  std::unique_ptr<Impl> impl_;
};

// Folders become the traces they hold (*.csv, *.log, *.json metric logs; NAME.host.csv files,
// *.truth.json and dotfiles are skipped), sorted by name; files are kept as given.
// Throws Error(kIo) for a path that does not exist.
[[nodiscard]] std::vector<std::string> expand_trace_paths(const std::vector<std::string>& paths);
// NAME.host.csv next to NAME.smi.csv (or NAME.csv), or "" when there is none.
[[nodiscard]] std::string sibling_host_trace(const std::string& trace_path);

}  // namespace epochcast
