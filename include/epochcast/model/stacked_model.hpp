// StackedModel: predicts a workload's epoch time on a target GPU from its run on a source GPU.
// Base learners (XGBoost through its C API, kernel ridge on Eigen, k-nearest neighbours, extra
// trees) predict log(target_epoch_s / source_epoch_s) from the source run's statistics, its epoch
// time and both GPUs' catalog specs; non-negative linear meta weights (one set for pairs between
// training GPUs, one for a GPU outside training) combine their out-of-fold predictions;
// split-conformal residuals give the interval. Immutable after fit: predict() is
// const and safe to call from several threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "epochcast/features/feature_row.hpp"
#include "epochcast/model/dataset.hpp"
#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/model/precision.hpp"
#include "epochcast/model/scaling_prior.hpp"

namespace epochcast {

// Model file format version; bump when the file layout or the pair features change.
// 4: utilisation-shaped prior; 5: kernel ridge default stack; 6: the scaling prior calibrated on the
// public throughput table (its numbers in the file), precision-aware, correction shrunk off the training GPUs.
// 7: the correction is trusted up to an excess chosen on the GPU-held-out folds, the excess over
// the job precision's compute peak and the bandwidth.
inline constexpr int kModelFormatVersion = 7;

// Called during long work: what is being done, how much of it is done.
using ProgressFn = std::function<void(std::string_view stage, std::size_t done, std::size_t total)>;

struct FitOptions {
  std::uint64_t seed = 42;
  int folds = 5;                 // out-of-fold folds for the meta learner (grouped)
  // Group the meta learner's folds by CNN model (true) or by workload (false). By model is
  // stricter: the stack and the interval then learn how wrong the base learners are on
  // networks they have never seen, which is what predict faces.
  bool group_folds_by_model = true;
  // Memory used/free/total describe the framework (TensorFlow fills the GPU) and the GPU, not
  // the workload: off by default (docs/model.md has the measurement).
  bool include_memory_features = false;
  // Learners predict the correction to a physical prior (Amdahl split of the source epoch by
  // its memory-busy, compute-busy and idle shares; prior_log_ratio in pair_features.hpp), not
  // log(target/source) itself. Corrections are clamped to their training range, so on a GPU
  // outside the training range the prediction is carried by the prior, not by extrapolation.
  bool residual_over_prior = true;
  // The prior is the scaling prior calibrated on the public throughput table (scaling_prior.hpp,
  // format 6); false: format 5's parameter-free amdahl.memory_clock_split (CLI --format5-prior).
  bool calibrated_prior = true;
  // The learned correction is shrunk toward 0 (the prior alone) as the source or target GPU's
  // compute peak for the job's precision or its bandwidth lies outside the training GPUs' range
  // by more than the excess the GPU-held-out folds validated (trusted_excess_log, chosen in the
  // fit): by (excess − trusted) / shrink_span_log, gone at that much more (ln 4: a GPU 4x beyond
  // what was validated gets the prior alone). 0 turns shrinking off.
  double shrink_span_log = 1.3862943611198906;
  // Also fit the meta learner on GPU-grouped out-of-fold predictions (each training target
  // GPU held out of both sides in turn): a learner that extrapolates badly to an unseen GPU
  // then loses weight, and a second interval is calibrated for unseen GPUs. Needs >= 3 GPUs.
  bool meta_gpu_folds = true;
  double interval_level = 0.9;   // nominal coverage of the prediction interval
  // 50 rounds at η 0.3 (format 3: 150 at 0.1): the booster earns ~0 meta weight either way, the
  // stack's accuracy is unchanged and the fit a third cheaper (docs/model.md).
  int xgb_rounds = 50;
  int xgb_max_depth = 4;
  double xgb_eta = 0.3;
  int trees = 100;               // extra trees
  int tree_min_leaf = 2;
  double tree_max_features = 0.5;  // share of features tried at each split
  int knn_k = 7;
  // Kernel ridge (RBF on a Nyström basis, docs/model.md) in place of linear ridge, with a
  // workload-grouped fold set for the meta weights of pairs between training GPUs and, for a
  // GPU outside training, weights without kernel ridge (it does not extrapolate). false: the
  // format-3 stack (linear ridge, one weight set; CLI --linear-ridge, which also sets XGBoost's
  // format-3 rounds/η).
  bool kernel_ridge = true;
  int threads = 2;               // fit workers: out-of-fold and final (fit, learner) tasks share them
};

struct LearnerValue {
  std::string learner;  // "xgboost", "kernel_ridge" (or "ridge"), "knn", "extra_trees"
  double epoch_s;
};

struct Prediction {
  double epoch_s = 0;       // the stack's prediction
  double lo_s = 0;          // interval at FitOptions::interval_level
  double hi_s = 0;
  std::vector<LearnerValue> per_learner;
};

// Source features outside what the model saw in training.
struct RangeCheck {
  std::vector<std::string> out_of_range;  // "power_drawW_mean=512 (training 23.1..298.7)"
  std::vector<std::string> missing;       // metrics present in training, NaN here
  [[nodiscard]] bool ok() const { return out_of_range.empty() && missing.empty(); }
};

class Learner;  // private (src/model/learners.hpp)

class StackedModel {
 public:
  StackedModel();
  ~StackedModel();
  StackedModel(StackedModel&&) noexcept;
  StackedModel& operator=(StackedModel&&) noexcept;

  // precision: the job's (docs/predict.md, "Precision"); kAuto is the rule kAutoPrecisionRule.
  [[nodiscard]] Prediction predict(const FeatureRow& source_features, double source_epoch_s,
                                   const GpuSpec& source, const GpuSpec& target,
                                   Precision precision = Precision::kAuto) const;
  // Base learners' and the stack's log(target/source) for a prepared pair-feature vector, its
  // prior and the correction's shrink factor (1: trusted, 0: prior alone); unseen_gpu: the source
  // or target GPU was not in training (the other meta weights).
  void predict_pair_features(std::span<const double> x, double prior, double shrink,
                             std::span<double> per_learner_log, double& stack_log, bool unseen_gpu = false) const;
  // The prior of log(target/source) for this pair (0 with --no-prior).
  [[nodiscard]] double prior_log_ratio_for(const FeatureRow& source_features, std::span<const double> x,
                                           const GpuSpec& source, const GpuSpec& target, Precision precision) const;
  // The share of the learned correction kept for this pair (FitOptions::shrink_span_log).
  [[nodiscard]] double correction_shrink(const GpuSpec& source, const GpuSpec& target,
                                         Precision precision = Precision::kAuto) const;
  // The log excess over the training GPUs' figures up to which the correction is kept whole,
  // chosen on the GPU-held-out folds (0 without them).
  [[nodiscard]] double trusted_excess_log() const { return trusted_excess_log_; }
  [[nodiscard]] const ScalingPrior& scaling_prior() const { return scaling_prior_; }

  [[nodiscard]] std::vector<std::string> source_gpus_in_training() const { return source_gpus_; }
  [[nodiscard]] std::vector<std::string> target_gpus_in_training() const { return target_gpus_; }
  [[nodiscard]] RangeCheck check_range(const FeatureRow& source_features) const;
  [[nodiscard]] std::vector<std::string> learner_names() const;
  // Meta weights for a pair whose GPUs were both in training, and for one with a GPU outside it.
  [[nodiscard]] const std::vector<double>& meta_weights() const { return meta_weights_; }
  [[nodiscard]] const std::vector<double>& meta_weights_unseen_gpu() const { return meta_weights_unseen_; }
  [[nodiscard]] double interval_half_width_log() const { return interval_q_log_; }
  // Used instead when the source or target GPU was not in training (when larger).
  [[nodiscard]] double unseen_gpu_interval_half_width_log() const { return interval_unseen_q_log_; }
  [[nodiscard]] const FitOptions& options() const { return options_; }
  [[nodiscard]] std::size_t training_pairs() const { return training_pairs_; }
  [[nodiscard]] const std::string& schema_hash() const;
  // training_data_fingerprint() of the pairs, rows and GPU figures it was fitted on
  // ("fnv1a64:…"); empty when unknown (a file written before 2026-12-01 lacks it).
  [[nodiscard]] const std::string& data_fingerprint() const { return data_fingerprint_; }
  // What it was fitted on (the file's training.dataset): a path, with "+ store DB runs 1-4, 9
  // (…)" for the job store rows a `fit --store` or a refit learned from.
  [[nodiscard]] const std::string& dataset_source() const { return dataset_source_; }
  // Per training pair, in the order given to the fit: log(measured / the stack's out-of-fold
  // prediction), the folds grouped as the meta weights' (a store job is its own group, so its
  // pairs' residuals are those of a model that never saw the job). In memory only: empty for a
  // model loaded from a file. What a calibration after a refit learns from (in-sample residuals
  // of the pairs just fitted are too small: docs/store.md).
  [[nodiscard]] const std::vector<double>& out_of_fold_log_residuals() const { return oof_log_residuals_; }

 private:
  // The fit builds the state and the model file reads and writes it; nothing else (fit_model
  // and save_model go through these).
  friend StackedModel fit_model_on_pairs(const Dataset&, const std::vector<RunPair>&,
                                         const GpuCatalog&, const FitOptions&, ProgressFn);
  friend std::string model_to_json(const StackedModel&);
  friend StackedModel model_from_json(std::string_view, const std::string&);

  FitOptions options_;
  std::vector<std::unique_ptr<Learner>> learners_;
  std::vector<double> meta_weights_;         // one per learner, >= 0: both GPUs in training
  std::vector<double> meta_weights_unseen_;  // the same for a source or target GPU not in training
  double interval_q_log_ = 0;         // half-width of the interval in log space
  // Half-width for a source or target GPU not in training, from GPU-held-out folds (0: none).
  double interval_unseen_q_log_ = 0;
  // Every learner's output (the correction to the prior, or the log ratio without a prior) is
  // clamped to its training range widened by a tenth of its span: ridge extrapolates wildly on
  // a GPU it never saw (leave-one-GPU-out), trees cannot.
  double log_ratio_lo_ = -10, log_ratio_hi_ = 10;
  std::vector<std::string> source_gpus_, target_gpus_;
  ScalingPrior scaling_prior_;  // fitted on the public table (calibrated_prior)
  // log of the fp32-code compute peak and the bandwidth: the training GPUs' range (correction_shrink).
  std::vector<double> spec_log_lo_, spec_log_hi_;
  double trusted_excess_log_ = 0;
  std::vector<double> feature_min_, feature_max_;  // per FeatureRow feature over source runs
  std::size_t training_pairs_ = 0;
  std::string dataset_source_;
  std::string data_fingerprint_;
  std::vector<double> oof_log_residuals_;
};

// A fingerprint of what a fit on `pairs` reads: both rows of every pair (statistics, epoch
// times, GPU, CNN model and workload) in pair order and the catalog figures of the GPUs they
// name; "fnv1a64:" and 16 hex digits. Equal for the same numbers written differently (CRLF,
// column order, "1.50" for "1.5"); different when any of them changes. The bundled validation
// figures are shown only for a model whose fingerprint is the bundled dataset's.
[[nodiscard]] std::string training_data_fingerprint(const Dataset& dataset, const std::vector<RunPair>& pairs,
                                                    const GpuCatalog& catalog);

// The pair-feature names (the model's schema) and their hash, for the running code.
[[nodiscard]] std::vector<std::string> pair_feature_names(bool include_memory_features);
[[nodiscard]] std::string model_schema_hash(bool include_memory_features);

// Fits on every pair of the dataset. Throws Error(kInvalidArgument) when the dataset has fewer
// than two GPU types or no workload on two GPUs (no pairs). Deterministic given options.seed.
[[nodiscard]] StackedModel fit_model(const Dataset& dataset, const GpuCatalog& catalog,
                                     const FitOptions& options = {}, ProgressFn progress = {});
// Fits on the given pairs only (evaluation protocols).
[[nodiscard]] StackedModel fit_model_on_pairs(const Dataset& dataset,
                                              const std::vector<RunPair>& pairs,
                                              const GpuCatalog& catalog,
                                              const FitOptions& options = {},
                                              ProgressFn progress = {});

// Versioned JSON with the schema, its hash, the options and every learner's state (XGBoost's
// own saved buffer). Throws Error(kIo) when the file cannot be written.
void save_model(const StackedModel& model, const std::string& path);
[[nodiscard]] std::string model_to_json(const StackedModel& model);
// Throws Error(kIo) when unreadable, Error(kParse) (with line:column) for a corrupt or
// truncated file, Error(kSchemaMismatch) naming both versions/hashes for another schema.
[[nodiscard]] StackedModel load_model(const std::string& path);
[[nodiscard]] StackedModel model_from_json(std::string_view text, const std::string& name);

// The model fitted from the bundled dataset and catalog with default options: loaded from
// $XDG_CACHE_HOME/epochcast (else ~/.cache/epochcast) when a file keyed by the dataset's,
// catalog's, schema's and options' hash and the running executable (size, mtime) is there, else
// fitted (a few seconds) and cached; the newest 6 entries are kept. A cache that cannot be
// written is not an error.
[[nodiscard]] std::shared_ptr<const StackedModel> default_model(ProgressFn progress = {});

}  // namespace epochcast
