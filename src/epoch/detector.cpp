// Live detection: samples pushed as they arrive, the estimate recomputed as the trace grows.
#include <algorithm>
#include <cmath>
#include <limits>

#include "epochcast/epoch/detect.hpp"

namespace epochcast {
namespace {

// Recompute after this many new samples at least: a 10 Hz feed costs a detection every 1.6 s
// at most. Guarded by Detector.AppendedChunksConvergeToOfflineResult.
constexpr std::size_t kRecomputeMinSamples = 16;
// ... or after half a candidate period, even when that is fewer (but this many at least): the
// live answer lags the data by at most half an epoch whatever the sampling (a 500 ms log with
// 5 s epochs: 16 samples were 1.5 epochs). Guarded by Detector.SlowFeedRecomputesEveryHalfEpoch.
constexpr std::size_t kRecomputeMinSamplesPerHalfEpoch = 2;
// ... or after this fraction of the trace, when more: the total work of a long run stays a
// geometric sum of detections.
constexpr std::size_t kRecomputeGrowthDivisor = 20;

}  // namespace

Detector::Detector(DetectOptions options) : options_(options) {}

bool Detector::push(const Trace& incoming) {
  const bool whole = trace_.size() == 0 ||
                     (incoming.start_unix_s == trace_.start_unix_s && incoming.size() >= trace_.size());
  if (whole) {
    trace_ = incoming;
  } else {
    const double shift = incoming.start_unix_s - trace_.start_unix_s;
    const std::size_t old = trace_.size();
    for (double t : incoming.time_s) {
      const double rebased = t + shift;
      // Samples at or before the last held one are repeats of what we have: skipped.
      if (!trace_.time_s.empty() && rebased <= trace_.time_s.back()) continue;
      trace_.time_s.push_back(rebased);
    }
    const std::size_t added = trace_.size() - old;
    const std::size_t skip = incoming.size() - added;
    for (auto& ch : trace_.channels) ch.values.resize(trace_.size(), std::numeric_limits<double>::quiet_NaN());
    for (const auto& ch : incoming.channels) {
      Channel& dst = trace_.channel(ch.metric);
      dst.values.resize(trace_.size(), std::numeric_limits<double>::quiet_NaN());
      for (std::size_t i = skip; i < ch.values.size(); ++i) dst.values[old + i - skip] = ch.values[i];
    }
  }
  const std::size_t grown = trace_.size() - std::min(trace_.size(), samples_at_last_run_);
  std::size_t needed = std::max(kRecomputeMinSamples, samples_at_last_run_ / kRecomputeGrowthDivisor);
  if (current_.candidate_period_s > 0 && current_.interval_s > 0) {
    const auto half_epoch = static_cast<std::size_t>(current_.candidate_period_s / current_.interval_s / 2);
    needed = std::min(needed, std::max(kRecomputeMinSamplesPerHalfEpoch, half_epoch));
  }
  if (runs_ > 0 && grown < needed) {
    changed_ = false;
    return false;
  }
  return recompute();
}

bool Detector::flush() { return recompute(); }

bool Detector::recompute() {
  Segmentation next = detect_epochs(trace_, options_);
  const auto& prev = current_;
  const bool period_moved = (prev.period_s > 0) != (next.period_s > 0) ||
                            (next.period_s > 0 && std::abs(next.period_s - prev.period_s) > 0.005 * prev.period_s);
  changed_ = runs_ == 0 || next.found != prev.found || period_moved ||
             std::abs(next.confidence - prev.confidence) > 0.05 || next.epochs.size() != prev.epochs.size();
  current_ = std::move(next);
  samples_at_last_run_ = trace_.size();
  ++runs_;
  return changed_;
}

}  // namespace epochcast
