// The Gumbel tail of the surrogates' maxima (src/epoch/null_tail.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "../../../src/epoch/null_tail.hpp"

namespace epochcast::detail {
namespace {

// Maxima drawn from a known Gumbel (mu 3, beta 0.5): the fitted tail matches the true one
// within a factor of 2 at 1e-3, and is monotone.
TEST(NullTail, FitsAKnownGumbel) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(1e-12, 1.0);
  std::vector<double> m(2000);
  for (double& v : m) v = 3.0 - 0.5 * std::log(-std::log(u(rng)));
  const double x = 3.0 - 0.5 * std::log(-std::log(1 - 1e-3));  // true P(max >= x) = 1e-3
  const double p = gumbel_tail_p(m, x);
  EXPECT_GT(p, 0.5e-3);
  EXPECT_LT(p, 2e-3);
  EXPECT_LT(gumbel_tail_p(m, x + 1), p);
  EXPECT_NEAR(gumbel_tail_p(m, 3.0), 1 - std::exp(-1.0), 0.05);
}

// Too few maxima, or none that spread: no tail (p = 1), never a small p by accident.
TEST(NullTail, TooFewOrFlatMaximaGiveOne) {
  const std::vector<double> few(kTailMinMaxima - 1, 2.0);
  EXPECT_EQ(gumbel_tail_p(few, 100.0), 1.0);
  const std::vector<double> flat(50, 2.0);
  EXPECT_EQ(gumbel_tail_p(flat, 100.0), 1.0);
}

}  // namespace
}  // namespace epochcast::detail
