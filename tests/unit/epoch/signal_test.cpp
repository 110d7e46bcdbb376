// The vectorised sweeps of the epoch stage against plain scalar loops, on lengths that leave
// every tail length of the vector blocks, with NaN and implausible readings placed in the tails too.
#include <gtest/gtest.h>

#include <algorithm>
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
  // Lags swept four at a time: every remainder of lags and of samples, lags past the end.
  for (std::size_t n : {3u, 5u, 9u, 22u, 23u, 24u, 25u, 777u}) {
    auto x = random_series(n, 3 + n);
    double mean = 0;
    for (double v : x) mean += v;
    mean /= static_cast<double>(x.size());
    for (double& v : x) v -= mean;
    double e = 0;
    for (double v : x) e += v * v;
    for (std::size_t lo : {1u, 2u, 6u})
      for (std::size_t hi : {lo, lo + 2, lo + 3, lo + 4, std::size_t{20}}) {
        std::vector<double> r;
        autocorrelation(x, lo, hi, r);
        ASSERT_EQ(r.size(), hi - lo + 1);
        for (std::size_t k = lo; k <= hi; ++k) {
          double s = 0;
          for (std::size_t i = 0; i + k < x.size(); ++i) s += x[i] * x[i + k];
          EXPECT_NEAR(r[k - lo], k < n ? s / e : 0.0, 1e-12) << n << " " << lo << " " << hi << " " << k;
        }
      }
  }
}

// The windowed sweep (levels 0-3 stored over part of their range, level 4 whole) gives the
// same values as the whole sweep and scalar pairwise means, for every tail length (n mod 16),
// store ranges that start and end inside a block or reach into the tail, and an index offset.
TEST(Signal, WindowedPyramidSweepMatchesWholeLevels) {
  for (std::size_t n = 0; n < 80; ++n) {
    for (std::size_t first : {0u, 5u}) {
      auto y = random_series(n + 200, n * 3 + first);
      const double base = 48, slope = 0.01, inv = 1.0 / 15, clip = 1.5;
      std::vector<std::vector<double>> ref(5);
      ref[0].resize(y.size());
      for (std::size_t i = 0; i < y.size(); ++i)
        ref[0][i] = std::clamp((y[i] - base - slope * static_cast<double>(first + i)) * inv, -clip, clip);
      for (std::size_t l = 1; l < 5; ++l) {
        ref[l].resize(ref[l - 1].size() / 2);
        for (std::size_t k = 0; k < ref[l].size(); ++k) ref[l][k] = 0.5 * (ref[l - 1][2 * k] + ref[l - 1][2 * k + 1]);
      }
      // Ranges: [n/3, n/3 + n/2) on level 0, halved per level; the last one runs to the end.
      PyramidStore want;
      for (std::size_t l = 0; l < 4; ++l) {
        const std::size_t len = y.size() >> l;
        want[l] = l == 3 ? std::pair{len / 2, len} : std::pair{std::min(len, (n / 3) >> l), std::min(len, ((n / 3) >> l) + 7 + n / 2)};
      }
      std::array<Buffer, 4> out;
      std::array<std::size_t, 4> from{};
      Buffer level4;
      ASSERT_EQ(affine_clip_pyramid(y, first, base, slope, inv, clip, -1e9, 1e9, want, out, from, &level4), 0u);
      for (std::size_t l = 0; l < 4; ++l) {
        ASSERT_LE(from[l], want[l].first) << n << " level " << l;
        ASSERT_GE(from[l] + out[l].size(), want[l].second) << n << " level " << l;
        ASSERT_LE(from[l] + out[l].size(), ref[l].size()) << n << " level " << l;
        for (std::size_t k = 0; k < out[l].size(); ++k)
          ASSERT_EQ(out[l][k], ref[l][from[l] + k]) << n << " level " << l << " at " << from[l] + k;
      }
      ASSERT_EQ(level4.size(), ref[4].size()) << n;
      for (std::size_t k = 0; k < level4.size(); ++k) ASSERT_EQ(level4[k], ref[4][k]) << n << " level 4 at " << k;
      // A NaN or an implausible reading anywhere (in a block or in the tail) is counted.
      for (std::size_t at : {std::size_t{0}, y.size() / 2, y.size() - 1}) {
        auto bad = y;
        bad[at] = at % 2 ? std::numeric_limits<double>::quiet_NaN() : 2e9;
        EXPECT_EQ(affine_clip_pyramid(bad, first, base, slope, inv, clip, -1e9, 1e9, want, out, from, &level4), 1u)
            << n << " at " << at;
        bad[at] = -std::numeric_limits<double>::infinity();
        EXPECT_EQ(affine_clip_pyramid(bad, first, base, slope, inv, clip, -1e9, 1e9, want, out, from, &level4), 1u)
            << n << " at " << at;
      }
    }
  }
}

TEST(Signal, QuantileIsExactOnLongTiedAndSkewedInput) {
  std::mt19937_64 rng(11);
  for (std::size_t n : {1u, 2u, 100u, 2047u, 2048u, 5000u, 16384u}) {
    for (int kind = 0; kind < 4; ++kind) {
      std::vector<double> x(n);
      for (std::size_t i = 0; i < n; ++i) {
        const double u = std::uniform_real_distribution<double>(0, 1)(rng);
        x[i] = kind == 0 ? u : kind == 1 ? std::floor(u * 4) : kind == 2 ? std::exp(10 * u) : (i % 97 == 0 ? 1e6 : 3.0);
      }
      if (kind == 3) std::sort(x.begin(), x.end());  // sorted, two values: pivots all on one tie
      for (double q : {0.0, 0.01, 0.25, 0.5, 0.99, 1.0}) {
        auto copy = x;
        const auto k = static_cast<std::size_t>(q * static_cast<double>(n - 1) + 0.5);
        std::nth_element(copy.begin(), copy.begin() + static_cast<std::ptrdiff_t>(k), copy.end());
        EXPECT_EQ(quantile(x, q), copy[k]) << n << " kind " << kind << " q " << q;
      }
    }
  }
}

TEST(Signal, CentredAutocorrelationMatchesHighPassMeanAndAcf) {
  for (std::size_t n : {1u, 2u, 7u, 64u, 1001u, 4099u})
    for (std::size_t width : {0u, 3u, 8u, 60u}) {
      const auto x = random_series(n, n + width);
      auto y = x;
      if (width > 0) subtract_moving_average(y, width);
      double mean = 0;
      for (double v : y) mean += v;
      mean /= static_cast<double>(n);
      for (double& v : y) v -= mean;
      std::vector<double> want, got;
      autocorrelation(y, 1, 23, want);
      Buffer work;
      centred_autocorrelation(x, width, 1, 23, work, got);
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-12) << n << " " << width << " " << k;
    }
}

// Busy runs without the division, against the byte-per-sample loop the detector used: integer
// utilisation whose 3-sample sums sit exactly on the threshold's boundary, every word tail.
std::vector<std::pair<std::size_t, std::size_t>> runs_by_bytes(const std::vector<double>& a, double threshold) {
  const std::size_t n = a.size();
  std::vector<unsigned char> busy(n);
  for (std::size_t i = 1; i + 1 < n; ++i) busy[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0 > threshold;
  if (n >= 2) {
    busy[0] = (a[0] + a[1]) / 2.0 > threshold;
    busy[n - 1] = (a[n - 2] + a[n - 1]) / 2.0 > threshold;
  } else if (n == 1) {
    busy[0] = a[0] > threshold;
  }
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  for (std::size_t i = 0; i < n;) {
    if (!busy[i]) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < n && busy[j]) ++j;
    runs.emplace_back(i, j);
    i = j;
  }
  return runs;
}

TEST(Signal, RunsAboveMatchesCentredMeanLoop) {
  std::mt19937_64 rng(5);
  for (std::size_t n = 0; n < 200; ++n)
    // The last five take the division fallback (3 * threshold is not finite, or NaN).
    for (double threshold : {0.0, 1.0 / 3.0, 50.0, 50.5, 2.0 / 3.0 + 1e-17, 1e300, 1e308, -1e308,
                             std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::quiet_NaN()}) {
      std::vector<double> a(n);
      for (auto& v : a)
        v = static_cast<double>(std::uniform_int_distribution<int>(0, 3)(rng)) *
            (threshold > 1 && threshold < 1e9 ? 33.5 : 0.5);
      EXPECT_EQ(runs_above(a, threshold), runs_by_bytes(a, threshold)) << n << " " << threshold;
    }
  // Sums one ulp either side of 3 * threshold, where dividing and the cut must agree.
  for (double t : {0.1, 1.0 / 3.0, 33.3, 1e-300}) {
    const double s = 3 * t;
    std::vector<double> a{0, 0, 0, s, 0, 0, std::nextafter(s, 1e308), 0, 0, std::nextafter(s, 0.0), 0, 0,
                          std::nextafter(std::nextafter(s, 0.0), 0.0), 0, 0};
    EXPECT_EQ(runs_above(a, t), runs_by_bytes(a, t)) << t;
  }
}

TEST(Signal, FastChecksFindNaNAndInfinityAnywhere) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();
  for (std::size_t n = 1; n < 40; ++n)
    for (std::size_t at = 0; at < n; ++at)
      for (double bad : {kNaN, kInf, -kInf}) {
        std::vector<double> x(n, 5.0);
        x[at] = bad;
        EXPECT_EQ(count_outside(x, 0, 10), 1u) << n << " " << at;
        EXPECT_EQ(count_outside(x, -kInf, kInf), std::isnan(bad) ? 1u : 0u) << n << " " << at;
        std::vector<double> t(n);
        for (std::size_t i = 0; i < n; ++i) t[i] = 0.5 * static_cast<double>(i);
        t[at] = bad;
        bool grid = true;
        const std::size_t first_bad = check_timestamps(t, 0.5, 0.01, grid);
        EXPECT_FALSE(grid) << n << " " << at;
        EXPECT_EQ(first_bad, at) << n << " " << at;  // not finite, or (-inf) decreasing there
      }
}

}  // namespace
}  // namespace epochcast::signal
