// The façade both front ends (CLI, server) call. Every rule of "trace in, ranked answer out"
// lives behind it; the front ends only parse, call and render.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "epochcast/epoch/segmentation.hpp"
#include "epochcast/model/stacked_model.hpp"  // ProgressFn
#include "epochcast/service/report.hpp"
#include "epochcast/trace/read.hpp"
#include "epochcast/trace/trace.hpp"

namespace epochcast {

struct ServiceConfig {
  std::string model_path;        // empty: the default model fitted from the bundled dataset
  std::string gpu_catalog_path;  // empty: data/gpus.csv of the bundled data
  std::string prices_path;       // empty: data/prices.csv of the bundled data
  ProgressFn progress;           // (stage, done, total) on long work; may be empty
  // Answers name this machine's files by base name only (serve: clients must not learn paths).
  bool hide_paths = false;
};

struct PredictRequest {
  // Catalog id or an nvidia-smi name ("Tesla T4"); empty: from the trace's name column.
  std::string source_gpu;
  // Catalog ids (or nvidia-smi names) to predict for; empty: every GPU of the catalog.
  std::vector<std::string> gpus;
  int epochs = 10;               // N for the cost of N epochs
  // The source's epoch time when known from elsewhere (training log); 0: from detection.
  // Needed when detection abstains; the features then cover the detector's busy region.
  double source_epoch_s = 0;
  // Detection's bar for "found" (DetectOptions::min_confidence). Lower accepts weaker evidence;
  // the confidence still widens the intervals and is named in the warnings.
  double min_detection_confidence = 0.5;
};

// Time spent per stage of one predict, for the benchmark and --verbose.
struct StageTimes {
  double read_s = 0;
  double detect_s = 0;
  double features_s = 0;
  double model_s = 0;            // all target GPUs
  double render_s = 0;           // filled by callers that render
};

// The bundled held-out figures (data/model-validation.json) when they belong to `model`: same
// schema, pair count and fit options, and fitted on the bundled dataset and catalog (its data
// fingerprint); else none, with a note saying why and how to measure them (`epochcast eval`).
[[nodiscard]] ModelValidation bundled_validation(const StackedModel& model);

class Service {
 public:
  // Loads the catalogs and the model (fitting the default model on first use; shows progress).
  // Throws Error(kIo/kParse/kSchemaMismatch) for a bad model or catalog file.
  explicit Service(ServiceConfig config = {});
  ~Service();
  Service(Service&&) noexcept;
  Service& operator=(Service&&) noexcept;

  // Epoch detection with the project's detector.
  [[nodiscard]] Segmentation analyze(const Trace& trace) const;

  // Trace → ranked prediction for every requested GPU. Throws Error(kNotFound) for an unknown
  // source or target GPU (the message lists the catalog), Error(kInvalidArgument) for epochs < 1.
  // When no epochs are found the report carries no predictions and a warning saying why.
  [[nodiscard]] PredictReport predict(const Trace& trace, const PredictRequest& request,
                                      StageTimes* times = nullptr) const;
  // Reads the file first (ReadOptions as for `detect`).
  [[nodiscard]] PredictReport predict_file(const std::string& path, const ReadOptions& read,
                                           const PredictRequest& request,
                                           StageTimes* times = nullptr) const;
  // Several traces: one item per trace; a trace that fails is reported, the rest go on.
  [[nodiscard]] std::vector<BatchItem> predict_batch(const std::vector<std::string>& paths,
                                                     const ReadOptions& read,
                                                     const PredictRequest& request) const;

  // The catalog's GPU ids in catalog order.
  [[nodiscard]] std::vector<std::string> gpu_ids() const;
  [[nodiscard]] const ModelValidation& validation() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Folders become the traces they hold (*.csv, *.log, *.json metric logs; NAME.host.csv files,
// *.truth.json and dotfiles are skipped), sorted by name; files are kept as given.
// Throws Error(kIo) for a path that does not exist.
[[nodiscard]] std::vector<std::string> expand_trace_paths(const std::vector<std::string>& paths);
// A GPU list as the front ends take it ("all", or "t4, a10g"): the ids, trimmed; empty for
// "all" or "". Error(kInvalidArgument) "<what> '<list>' names no GPU" for one like ",,".
[[nodiscard]] std::vector<std::string> parse_gpu_list(std::string_view list, std::string_view what);
// NAME.host.csv next to NAME.smi.csv (or NAME.csv), or "" when there is none.
[[nodiscard]] std::string sibling_host_trace(const std::string& trace_path);

}  // namespace epochcast
