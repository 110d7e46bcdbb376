// One period hypothesis, whichever proposer made it (autocorrelation with boundary matching,
// boundary events, edge chain, whole-region search); the arbitration (arbitration.hpp) picks
// among them. docs/detection.md "Whole-region search" and "Method".
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "busy_region.hpp"
#include "epochcast/core/metric.hpp"
#include "epochcast/epoch/detect.hpp"

namespace epochcast::detail {

struct PeriodHypothesis {
  bool ok = false;                   // the proposer has a hypothesis at all
  double period_samples = 0;         // samples of the grid (its median interval)
  std::vector<double> boundaries_s;  // seconds from the trace's first sample, in order
  std::vector<double> evidence;      // whole-region search: the evidence at each inner boundary, in order
  std::vector<Metric> channels;      // the channels whose evidence it rests on
  double confidence = 0;             // the proposer's own, 0..1, before arbitration
  double epochs = 0;                 // epochs in view at its period (the proposer's count)
  // Evidence against chance where the proposer has a null (1: none). Whole-region search:
  // p_phase against phase-randomised surrogates, p_block against block-scrambled copies.
  double p_value = 1, p_phase = 1, p_block = 1;
  double p_tail = 1;  // whole-region search: Gumbel tail against both nulls (null_tail.hpp)
  std::string why;   // the evidence in words, when this hypothesis is the answer
  std::string note;  // what it suggests, when another answer is taken
};

// What every proposer is given: the grid, its busy region and the detection's options.
struct ProposerInput {
  const Grid& grid;
  Region region;
  double min_lag = 0;  // shortest period, grid samples
  double max_lag = 0;  // longest (0: none)
  const DetectOptions& options;
  [[nodiscard]] bool idle_before() const { return region.begin > 0; }
  [[nodiscard]] bool idle_after() const { return region.end < grid.n; }
  [[nodiscard]] double start_s() const { return region_start_s(region, grid.dt); }
  [[nodiscard]] double end_s() const { return region_end_s(region, grid.n, grid.dt); }
};

// Resolution rule: the boundaries a proposer matched must span at least this many samples, so
// that an error of one sample in their positions stays within 3 % of the period.
inline constexpr double kMinSpanSamples = 1.0 / 0.03;

// Whole epochs needed in view: options.min_epochs less 0.2 epoch of slack, as the busy region's
// edges are found to a sample or two and a run of exactly N epochs must count as N.
inline constexpr double kEpochCountSlack = 0.2;
inline double min_epochs_in_view(const DetectOptions& options) {
  return static_cast<double>(options.min_epochs) - kEpochCountSlack;
}

inline double clamp01(double v) { return std::clamp(v, 0.0, 1.0); }

}  // namespace epochcast::detail
