// The whole-region search's second statistic (docs/detection.md "Whole-region search", step 4b): instead of
// boundaries on an even grid (region_scan.hpp), a chain of boundaries each one epoch after the
// last, give or take a slack of that epoch. Real epoch lengths vary independently (issue 23:
// 4-12 %), so over 100 epochs a boundary wanders sqrt(100) x 2-10 % = 0.2-1 periods off any even
// grid, while each gap stays within its own epoch's variation. A dynamic programme finds, per
// period, the chain of largest boundary evidence; region_search.cpp runs it on the data and on
// every surrogate, as it runs the grid scan.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "region_scan.hpp"

namespace epochcast::detail {

// Each gap between consecutive boundaries is within this fraction of the period: the same two
// slacks as the grid's (kBoundarySlackTight, kBoundarySlack), now per epoch instead of per
// boundary position. No constant of its own. Guarded by BoundaryChain.* (boundary_chain_test).
inline constexpr double kChainSlacks[] = {kBoundarySlackTight, kBoundarySlack};

// The chain's block-scrambled null cuts the region into blocks of this many of its epochs
// (uniform): about one boundary per block, so the events are kept and their spacing is not.
inline constexpr double kChainBlockMin = 0.5;
inline constexpr double kChainBlockMax = 1.5;

struct ChainBest {
  double z = -1e300;  // (mean chain evidence - mu_h) / (sd_h / sqrt(K)), mu_h and sd_h of the windowed maximum
  double period = 0;  // the period tried (the boundaries' mean gap is the estimate)
  double slack = 0;
  std::vector<std::size_t> boundaries;  // the chain, in samples (filled for the best only)
};

// The best chain over periods p_lo, p_lo * kPeriodStep, ... <= p_hi and both slacks, on the
// excursions' channel mean ex.g. The first
// boundary lies within one epoch (plus slack) of the region's start, the last within one of its
// end; with idle before (after), the region's edge is boundary 0 (the last) and the first
// (last) inner boundary lies an epoch, less the slack or plus a lead-in (kLeadIn), from it.
// With `stop_at` finite, returns at the first chain with z >= stop_at (only that then holds).
ChainBest chain_scan(const Excursions& ex, const RegionSearchOptions& o, double p_lo, double p_hi,
                     double stop_at = std::numeric_limits<double>::infinity());

}  // namespace epochcast::detail
