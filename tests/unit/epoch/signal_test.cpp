// The vectorised sweeps of the epoch stage against plain scalar loops, on lengths that leave
// every tail case (n mod 8 = 0..7), with NaN and implausible readings placed in the tails too.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "../../../src/epoch/signal.hpp"

namespace epochcast::signal {
namespace {

std::vector<double> random_series(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(50, 20);
  std::vector<double> x(n);
  for (auto& v : x) v = g(rng);
  return x;
}

TEST(Signal, AffineClipPyramidMatchesScalarLevelsAndCountsBadReadings) {
  for (std::size_t n : {1u, 2u, 3u, 7u, 8u, 9u, 15u, 16u, 17u, 63u, 64u, 65u, 1001u}) {
    auto y = random_series(n, n);
    const double base = 48, slope = 0.01, inv = 1.0 / 15, clip = 1.5;
    std::array<Buffer, 4> out;
    ASSERT_EQ(affine_clip_pyramid(y, base, slope, inv, clip, -1e9, 1e9, out), 0u);
    std::vector<double> ref(n);
    for (std::size_t i = 0; i < n; ++i)
      ref[i] = std::clamp((y[i] - base - slope * static_cast<double>(i)) * inv, -clip, clip);
    ASSERT_EQ(out[0].size(), n);
    for (std::size_t i = 0; i < n; ++i) EXPECT_DOUBLE_EQ(out[0][i], ref[i]) << n << " " << i;
    for (std::size_t l = 1; l < 4; ++l) {
      std::vector<double> half(ref.size() / 2);
      for (std::size_t k = 0; k < half.size(); ++k) half[k] = 0.5 * (ref[2 * k] + ref[2 * k + 1]);
      ASSERT_EQ(out[l].size(), half.size()) << n << " level " << l;
      for (std::size_t k = 0; k < half.size(); ++k) EXPECT_DOUBLE_EQ(out[l][k], half[k]) << n << " level " << l;
      ref = half;
    }
    // Bad readings: one NaN, one above the range, one below; each counted once wherever it is.
    if (n >= 3) {
      y[n - 1] = std::numeric_limits<double>::quiet_NaN();
      y[0] = 1e10;
      y[n / 2] = -1e10;
      EXPECT_EQ(affine_clip_pyramid(y, base, slope, inv, clip, -1e9, 1e9, out), 3u) << n;
      EXPECT_EQ(count_outside(y, -1e9, 1e9), 3u) << n;
    }
  }
}

TEST(Signal, CountOutsideAndLineSums) {
  for (std::size_t n : {0u, 1u, 2u, 5u, 8u, 13u, 1000u}) {
    auto y = random_series(n, 7 + n);
    std::size_t outside = 0;
    double s = 0, siy = 0;
    for (std::size_t i = 0; i < n; ++i) {
      outside += !(y[i] >= 30 && y[i] <= 70);
      s += y[i];
      siy += static_cast<double>(i) * y[i];
    }
    EXPECT_EQ(count_outside(y, 30, 70), outside) << n;
    double a = 0, b = 0;
    line_sums(y, a, b);
    EXPECT_NEAR(a, s, 1e-9 * (std::abs(s) + 1)) << n;
    EXPECT_NEAR(b, siy, 1e-9 * (std::abs(siy) + 1)) << n;
  }
}

TEST(Signal, SubtractMovingAverageMatchesMovingAverage) {
  for (std::size_t n : {1u, 3u, 4u, 5u, 17u, 100u, 1003u})
    for (std::size_t width : {1u, 2u, 3u, 8u, 31u}) {
      auto x = random_series(n, n * 31 + width);
      const auto avg = moving_average(x, width);
      auto y = x;
      subtract_moving_average(y, width);
      for (std::size_t i = 0; i < n; ++i) EXPECT_NEAR(y[i], x[i] - avg[i], 1e-9) << n << " " << width << " " << i;
    }
}

TEST(Signal, CheckTimestampsFindsFirstBadSampleAndGrid) {
  std::vector<double> t(101);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = 0.1 * static_cast<double>(i);
  bool grid = false;
  EXPECT_EQ(check_timestamps(t, 0.1, 0.005, grid), t.size());
  EXPECT_TRUE(grid);
  t[57] += 0.02;  // off the grid, still increasing
  EXPECT_EQ(check_timestamps(t, 0.1, 0.005, grid), t.size());
  EXPECT_FALSE(grid);
  t[57] = 5.0;  // below t[56] = 5.6: the first bad index is 57
  EXPECT_EQ(check_timestamps(t, 0.1, 0.005, grid), 57u);
  t[57] = 5.7;
  t[100] = std::numeric_limits<double>::quiet_NaN();  // the scalar tail
  EXPECT_EQ(check_timestamps(t, 0.1, 0.005, grid), 100u);
  t[100] = 10.0;
  t[0] = std::numeric_limits<double>::infinity();
  EXPECT_EQ(check_timestamps(t, 0.1, 0.005, grid), 0u);
}

TEST(Signal, AutocorrelationMatchesDirectSum) {
  auto x = random_series(777, 3);
  double mean = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  for (double& v : x) v -= mean;
  std::vector<double> r;
  autocorrelation(x, 1, 20, r);
  double e = 0;
  for (double v : x) e += v * v;
  for (std::size_t k = 1; k <= 20; ++k) {
    double s = 0;
    for (std::size_t i = 0; i + k < x.size(); ++i) s += x[i] * x[i + k];
    EXPECT_NEAR(r[k - 1], s / e, 1e-12) << k;
  }
}

}  // namespace
}  // namespace epochcast::signal
