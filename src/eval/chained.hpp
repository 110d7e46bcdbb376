// Semi-real long runs (issue 23, "Long runs"): a shared trace's real epochs chained into a run of
// 10-100 epochs, with the trace's real start-up before them and its real tail after, each epoch
// stretched or shrunk to a jittered length. Truth is known by construction. Used by
// `detect_bench --eval-long` and tests/unit/epoch/chained_runs_test.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "epochcast/epoch/segmentation.hpp"
#include "epochcast/trace/trace.hpp"
#include "eval/variants.hpp"

namespace epochcast::eval {

struct ChainSpec {
  int epochs = 30;             // epochs in the chain
  double length_cv = 0.05;     // relative std of each epoch's length around its source epoch's
};

struct ChainedRun {
  Trace trace;                     // start-up + chained epochs + tail, on a regular time axis
  std::vector<EpochSpan> epochs;   // seconds from the first sample
  double period_s = 0;             // mean of the chained epochs' lengths
  bool has_signature = true;       // the source trace's truth says it has a validation pass
};

// Each chained epoch is one of the real epochs (the first is the source's first, with its warm-up;
// the last its last; those between drawn from its inner epochs as 1 + u mod (epochs - 2), u
// uniform over all epochs: with 5, inner epochs 1 and 2 twice as often as 3), resampled by nearest
// sample to round(n * (1 + e)) samples, e ~ N(0, length_cv) clipped to +/- 3 sd (the readings
// and the signature's shape are kept; its duration scales). The time axis is the trace's median
// interval throughout. Deterministic for a seed. Throws std::runtime_error when the source has
// fewer than 8 samples in an epoch.
[[nodiscard]] ChainedRun chain_real_epochs(const testing::RealBase& base, const ChainSpec& spec, std::uint64_t seed);

}  // namespace epochcast::eval
