// Residual calibration per (source GPU, target GPU) from the store's measured pairs: a
// shrinkage estimate of the model's log-ratio bias on that GPU pair, applied at predict time
// between refits. docs/store.md ("Calibration") has the estimator and its measured effect.
#pragma once

#include <string>
#include <vector>

#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/model/stacked_model.hpp"
#include "epochcast/store/pairs.hpp"

namespace epochcast {

struct CalibrationOptions {
  // The pooled residual spread starts from this prior (log units; the bundled model's lomo
  // error is ~7 %), worth this many pairs, so one or two pairs cannot claim a tiny spread.
  double prior_residual_sd = 0.08;
  double prior_residual_weight = 4;
  // A pair's mean must stand this many times its variance above zero (t² > threshold) before
  // any of it is taken; 1 is plain positive-part James–Stein. Larger protects GPU pairs the
  // model already predicts without bias (bench/fleet_replay_bench.cpp measured 1, 3 and 5).
  double threshold = 3;
  // Location by the median instead of the mean: per-run effects make residuals heavy-tailed
  // (the median kept the fleet replay within 0.6 % of the bundled model on every seen pair).
  bool median = true;
  // Fewer pairs than this leave a GPU pair uncorrected: the median of one or two pairs is one
  // of them, and a single run far off its workload's usual time then moved every prediction
  // (the fleet replay: 5.70 % → 8.77 % MAPE after one pair on a pair the model knew).
  std::size_t min_pairs = 3;
  // Per GPU pair, pick the estimator by leave-one-job-out on that pair's own residuals: each
  // of kLojoCandidates (no correction first; then median/mean at threshold 1 and 3) predicts
  // every pair from the others, and the one of least mean |exp(r − b) − 1| is used (ties: the
  // earlier, so no correction wins unless a correction earns its place on data it did not see).
  // The fields above then only set the fallback for a pair with too few pairs to choose on.
  bool choose_by_lojo = false;
};

// One GPU pair's residual log(measured / predicted) over its measured pairs.
struct PairResidual {
  std::string source_gpu, target_gpu;
  double log_residual = 0;
};

struct PairCalibration {
  std::string source_gpu, target_gpu;
  std::size_t pairs = 0;
  double mean_log_residual = 0;  // raw mean
  double log_bias = 0;           // shrunk: what predict multiplies by exp() of
  double shrink = 0;             // log_bias / mean_log_residual, 0..1
  std::string estimator;         // "median t=3" ...; "none" when chosen so (choose_by_lojo)
};

class Calibration {
 public:
  Calibration() = default;
  Calibration(std::vector<PairCalibration> pairs, double residual_sd);
  [[nodiscard]] const PairCalibration* find(const std::string& source_gpu, const std::string& target_gpu) const;
  // 0 when the pair has no measured pairs.
  [[nodiscard]] double log_bias(const std::string& source_gpu, const std::string& target_gpu) const;
  [[nodiscard]] const std::vector<PairCalibration>& pairs() const { return pairs_; }
  [[nodiscard]] double residual_sd() const { return residual_sd_; }
  [[nodiscard]] bool empty() const { return pairs_.empty(); }

 private:
  std::vector<PairCalibration> pairs_;
  double residual_sd_ = 0;
};

// Per GPU pair: b = mean · max(0, 1 − threshold · σ² / (n · mean²)) (positive-part James–Stein toward 0,
// σ² the pooled within-pair residual variance with the prior above): a pair whose mean is
// within its own noise is left alone, a clear bias is taken almost whole after a few pairs.
[[nodiscard]] Calibration fit_calibration(const std::vector<PairResidual>& residuals,
                                          const CalibrationOptions& options = {});

// The model's residuals on the measured pairs (runs by store id; GPUs from the catalog;
// pairs naming a GPU the catalog lacks are skipped).
[[nodiscard]] std::vector<PairResidual> pair_residuals(const PairSet& set, const std::vector<RunRecord>& runs,
                                                       const StackedModel& model, const GpuCatalog& catalog);

}  // namespace epochcast
