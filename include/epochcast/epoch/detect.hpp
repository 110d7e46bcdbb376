// Epoch period detection: Trace -> Segmentation, offline (detect_epochs) and live (Detector).
//
// Method (docs/detection.md): resample every usable channel to a uniform grid, find the busy
// training region, propose periods from a multi-resolution combined autocorrelation (lags of
// 8..16 samples on each level of an averaging pyramid, so 8 to ~1e6 samples per epoch cost the
// same), fold the channels at the best period to learn the epoch's boundary signature, match
// that template epoch by epoch and fit the boundary grid by least squares.
#pragma once

#include <cstddef>
#include <string>

#include "epochcast/epoch/segmentation.hpp"
#include "epochcast/trace/trace.hpp"

namespace epochcast {

struct DetectOptions {
  // Below this the answer is found:false ("low confidence") with the estimate in the reason.
  double min_confidence = 0.5;
  // Fewer whole epochs in view than this: found:false, candidate_period_s holds the estimate.
  int min_epochs = 3;
  // Shortest period searched, in samples of the median interval (aliasing floor).
  double min_period_samples = 8;
  // Optional bounds in seconds (0 = no bound).
  double min_period_s = 0;
  double max_period_s = 0;
  // Analyse the whole trace instead of the busy region only.
  bool whole_trace = false;
};

[[nodiscard]] Segmentation detect_epochs(const Trace& trace, const DetectOptions& options = {});

// Live detection: push samples as they arrive; the estimate is recomputed when enough new
// samples have accumulated (5 % growth or one candidate period's worth, at least 16 samples).
class Detector {
 public:
  explicit Detector(DetectOptions options = {});

  // Accepts either the whole trace so far (same start_unix_s and at least as many samples as
  // already held: replaces) or only the newly appended samples (later start_unix_s: appended,
  // times re-based on the first trace). Returns true when the estimate changed.
  bool push(const Trace& whole_or_appended);
  // Recompute now regardless of growth (e.g. at end of input).
  bool flush();

  [[nodiscard]] const Segmentation& current() const { return current_; }
  // Whether the last push/flush changed found, the period (> 0.5 %), the confidence (> 0.05)
  // or the number of epochs.
  [[nodiscard]] bool changed() const { return changed_; }
  [[nodiscard]] const Trace& trace() const { return trace_; }
  [[nodiscard]] std::size_t runs() const { return runs_; }

 private:
  bool recompute();

  DetectOptions options_;
  Trace trace_;
  Segmentation current_;
  std::size_t samples_at_last_run_ = 0;
  std::size_t runs_ = 0;
  bool changed_ = false;
};

}  // namespace epochcast
