// The whole-region search's inner scan (docs/detection.md "Whole-region search"): the excursion
// series of each channel, and the best (period, phase) over the region by the adaptive Stouffer
// combination of every channel's boundary score. region_search.cpp runs it on the data and on
// every surrogate; the answers are those of bench/region_search_reference.hpp, bit for bit.
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include "region_search.hpp"

namespace epochcast::detail {

// Each boundary may sit this fraction of a period off the even grid: real epochs vary 4-12 %
// in length (issue 23), so over 4-5 epochs a boundary wanders ~15 % from the best grid.
// Guarded by real_traces_test (lenet5, ~6 % variation) and the varied synthetic set.
constexpr double kBoundarySlack = 0.15;
// A second, tight slack for runs whose epochs hardly vary (0-2 %: most runs with a fixed data
// set and no contention); the search takes whichever scores better, the surrogates the same.
constexpr double kBoundarySlackTight = 0.05;
// With idle before the region, the first epoch starts at the region's start, give or take a
// warm-up or lead-in of this fraction of a period (and as much slack early).
constexpr double kLeadIn = 0.3;
// Geometric step of the period grid: finer than the slack, so no period is missed between steps.
constexpr double kPeriodStep = 1.02;
// Structure slower than this fraction of the region is removed before excursions are measured
// (a third of an epoch at 4 epochs, several epochs at 30: boundary signatures are short).
constexpr double kSlowFraction = 1.0 / 12;
// Excursions larger than this many mean excursions count as this many (one spike is one event).
constexpr double kExcursionCap = 8;

// Per channel: its excursion |x - running median| in units of its mean excursion, capped; the
// two samples at each end (the region's edge ramp) get the channel's median. Channels without
// any excursion are left out. g: their mean over channels (boundaries are located on it).
struct Excursions {
  std::vector<std::vector<double>> e;
  std::vector<double> g;
};
Excursions region_excursions(const std::vector<std::span<const double>>& ch);

// The same excursions with their samples reordered: out.e[c][i] = ex.e[c][perm[i]], and
// out.g[i] = ex.g[perm[i]] (the boundary chain scores g).
void permute_excursions(const Excursions& ex, std::span<const std::size_t> perm, Excursions& out);

struct ScanBest {
  double z = -1e300;  // adaptive Stouffer combination over channels of each one's boundary score
  double period = 0, phase = 0;
  std::size_t half = 0, k_first = 0, k_last = 0;
};

// The best (period, phase) for periods p_lo, p_lo * kPeriodStep, ... <= p_hi: for each, every
// channel's mean windowed maximum at the predicted boundaries, standardised against the same
// maximum at random positions of that channel (z_c = (mean - mu_c) / (sd_c / sqrt(K))),
// combined over channels as the best over k of the k strongest channels' sum z_c / sqrt(k).
// With `stop_at` finite, the scan returns at the first hypothesis with z >= stop_at (the
// surrogates only ask whether one scores as well as the data): then only z >= stop_at holds.
ScanBest region_scan(const Excursions& ex, const RegionSearchOptions& o, double p_lo, double p_hi,
                     double stop_at = std::numeric_limits<double>::infinity());

}  // namespace epochcast::detail
