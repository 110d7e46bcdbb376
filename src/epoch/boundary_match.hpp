// The autocorrelation proposer's boundaries (docs/detection.md "Method" 6): fold the channels at
// the period to learn one epoch's signature, match it epoch by epoch along a chain, and fit the
// boundary grid by robust least squares.
#pragma once

#include <cstddef>
#include <vector>

#include "acf_periods.hpp"

namespace epochcast::detail {

struct BoundaryFit {
  std::vector<double> boundaries;  // original sample index (continuous), event mid-points
  double period_samples = 0;
  double jitter = 1;               // rms residual / period
  double inlier_fraction = 0;
  std::size_t matched = 0;
  std::size_t searched = 0;  // boundaries looked for (every stride-th beyond 4,096 epochs)
  std::size_t stride = 1;
  // The folded signature repeats half a period later, with quiet in between: the period
  // is probably twice the true one.
  bool signature_repeats_at_half = false;
};

// Folds the channels at the period to learn one epoch's signature (where the channels deviate
// most from their typical level), then finds that signature near each predicted boundary.
BoundaryFit locate_boundaries(const Analysis& an, const Refined& ref);

}  // namespace epochcast::detail
