// The whole-region search as a proposer (docs/detection.md "Whole-region search"): the grid's
// channels over the busy region, averaged onto the search's level, searched with its nulls.
#pragma once

#include <atomic>

#include "hypothesis.hpp"
#include "zscore_pyramid.hpp"

namespace epochcast::detail {

// The other proposers' period counts as the search's when within this fraction of it (the
// search's own boundary slack is 15 %; its period fit is good to a few %).
// Guarded by NullTestedReal.* (resnet18 confirmed) and RealVariants.*.
inline constexpr double kRegionAgree = 0.05;

// Significant: better than every one of 99 phase-randomised surrogates (p = 0.01; by
// construction ~1 % of runs without epoch structure pass) and every one of 19 block-scrambled
// copies (p = 0.05: phase surrogates alone let 13 of 600 scrambled copies through).
// Guarded by NullSuite.* (null_suite_test).
inline constexpr double kRegionAlpha = 0.01;
inline constexpr double kRegionBlockAlpha = 0.05;

struct RegionProposal {
  enum class Kind {
    kRun,            // searched: h holds the hypothesis (h.ok) or why there is none (h.why)
    kOff,            // the arbitration is switched off (detail::set_region_arbitration)
    kNoData,         // nothing to search
    kTooManyEpochs,  // the other proposers' period is shorter than the search's level resolves
    kTooFewEpochs,   // theirs spans fewer than the 3 epochs the search needs (--min-epochs lowered)
  };
  Kind kind = Kind::kNoData;
  PeriodHypothesis h;  // period in grid samples; p_value = p_phase, p_block
  // When the even grid's significant best was m >= 2 of the other proposers' period (or best
  // guess) and a boundary chain near theirs beat its own nulls, h is that chain and this is m:
  // the arbitration then asks the chain's boundaries, m at a time, to carry alike evidence.
  std::size_t grid_multiple = 0;
  // The job is idle before and after the region: the search's grid is anchored at both of the
  // run's edges (the edges count as boundaries where the grid puts one there), so its
  // least-squares period spans the run, not only its inner boundaries.
  bool both_edges = false;
};

// `others`: the other proposers' answer (its period steers when the nulls also estimate the
// typical surrogate's score, and decides whether the search can test it at all).
RegionProposal propose_by_region_search(const ProposerInput& in, const Analysis& an, const Segmentation& others);

extern std::atomic<bool> g_region_arbitration;

}  // namespace epochcast::detail
