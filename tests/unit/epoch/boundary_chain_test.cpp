// The boundary chain (src/epoch/boundary_chain.cpp): it follows boundaries whose gaps vary
// independently, where the even grid loses them, and its slack is what bounds a gap.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include "../../../src/epoch/boundary_chain.hpp"
#include "../../../src/epoch/region_scan.hpp"

namespace epochcast {
namespace {

// One channel of excursions: background noise in [0, 1), a spike of 6 at each boundary; gaps
// P (1 + e), e ~ N(0, cv) clipped to +/- 2 cv. Returns the boundaries.
std::vector<std::size_t> spikes(detail::Excursions& ex, double P, double cv, int epochs, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> e(0.0, cv);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<std::size_t> b;
  double at = 0;
  for (int k = 0; k < epochs; ++k) {
    at += P * (1 + std::clamp(e(rng), -2 * cv, 2 * cv));
    b.push_back(static_cast<std::size_t>(std::lround(at)));
  }
  const std::size_t n = b.back() + static_cast<std::size_t>(P / 2);
  b.pop_back();  // the last "boundary" is the region's end
  std::vector<double> x(n);
  for (double& v : x) v = u(rng);
  for (std::size_t k : b) x[k] = 6;
  ex.e = {x};
  ex.g = x;
  return b;
}

// 100 epochs of 20 samples, gaps varying 6 %: the boundaries wander ~sqrt(100) x 6 % = 0.6
// periods off any even grid. The chain (15 % slack per gap) finds nearly every one and the
// mean gap; its score is far above the grid's best.
TEST(BoundaryChain, FollowsBoundariesThatWanderOffTheGrid) {
  detail::Excursions ex;
  const auto truth = spikes(ex, 20, 0.06, 100, 7);
  detail::RegionSearchOptions o;
  const double mean_gap = static_cast<double>(truth.back() - truth.front()) / static_cast<double>(truth.size() - 1);
  const auto c = detail::chain_scan(ex, o, 8, 60);
  ASSERT_GE(c.boundaries.size(), 2u);
  std::size_t hit = 0;
  for (std::size_t b : c.boundaries)
    for (std::size_t t : truth) hit += b == t;
  EXPECT_GE(hit, truth.size() * 9 / 10) << "of " << truth.size();
  const double gap = static_cast<double>(c.boundaries.back() - c.boundaries.front()) /
                     static_cast<double>(c.boundaries.size() - 1);
  EXPECT_NEAR(gap, mean_gap, 0.02 * mean_gap);
  const auto grid = detail::region_scan(ex, o, 8, 60);
  EXPECT_GT(c.z, 2 * grid.z) << "grid z " << grid.z;
}

// No gap outside [P (1 - slack), P (1 + slack)] of the period tried: with the slack the
// largest of kChainSlacks, a chain at 2 P cannot take every boundary of P.
TEST(BoundaryChain, EveryGapWithinTheSlackOfThePeriodTried) {
  detail::Excursions ex;
  spikes(ex, 20, 0.03, 40, 11);
  detail::RegionSearchOptions o;
  const auto c = detail::chain_scan(ex, o, 30, 60);  // periods from 1.5 P up
  ASSERT_GE(c.boundaries.size(), 2u);
  for (std::size_t k = 1; k < c.boundaries.size(); ++k) {
    const auto gap = static_cast<double>(c.boundaries[k] - c.boundaries[k - 1]);
    EXPECT_GE(gap, std::ceil(c.period * (1 - c.slack))) << k;
    EXPECT_LE(gap, std::floor(c.period * (1 + c.slack))) << k;
  }
  EXPECT_GT(c.period, 30 / 1.001);
}

}  // namespace
}  // namespace epochcast
