// The vectorised sweeps of the epoch stage against plain scalar loops, on lengths that leave
// every tail length of the vector blocks, with NaN and implausible readings placed in the tails too.
// Every test runs on each dispatch path (baseline SSE2, AVX2 and AVX-512, the vector ones
// skipped on a processor without them), and the vector paths are compared with the baseline
// bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../../../src/epoch/signal.hpp"
#include "epochcast/epoch/detect.hpp"
#include "eval/synthetic.hpp"
#include "epochcast/trace/read.hpp"

namespace epochcast::signal {
namespace {

std::vector<double> random_series(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(50, 20);
  std::vector<double> x(n);
  for (auto& v : x) v = g(rng);
  return x;
}

class Signal : public ::testing::Test {};

TEST_F(Signal, AffineClipPyramidMatchesScalarLevelsAndCountsBadReadings) {
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

TEST_F(Signal, CountOutsideAndLineSums) {
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

TEST_F(Signal, SubtractMovingAverageMatchesMovingAverage) {
  for (std::size_t n : {1u, 3u, 4u, 5u, 17u, 100u, 1003u})
    for (std::size_t width : {1u, 2u, 3u, 8u, 31u}) {
      auto x = random_series(n, n * 31 + width);
      const auto avg = moving_average(x, width);
      auto y = x;
      subtract_moving_average(y, width);
      for (std::size_t i = 0; i < n; ++i) EXPECT_NEAR(y[i], x[i] - avg[i], 1e-9) << n << " " << width << " " << i;
    }
}

TEST_F(Signal, CheckTimestampsFindsFirstBadSampleAndGrid) {
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

TEST_F(Signal, AutocorrelationMatchesDirectSum) {
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
TEST_F(Signal, WindowedPyramidSweepMatchesWholeLevels) {
  for (std::size_t n = 0; n < 80; ++n) {
    for (std::size_t first : {0u, 5u}) {
      auto y = random_series(n + 200, n * 3 + first);
      const double base = 48, slope = 0.01, inv = 1.0 / 15, clip = 1.5;
      std::vector<std::vector<double>> ref(6);
      ref[0].resize(y.size());
      for (std::size_t i = 0; i < y.size(); ++i)
        ref[0][i] = std::clamp((y[i] - base - slope * static_cast<double>(first + i)) * inv, -clip, clip);
      for (std::size_t l = 1; l < 6; ++l) {
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
      Buffer level4, level5;
      ASSERT_EQ(affine_clip_pyramid(y, first, base, slope, inv, clip, -1e9, 1e9, want, out, from, &level4, &level5), 0u);
      for (std::size_t l = 0; l < 4; ++l) {
        ASSERT_LE(from[l], want[l].first) << n << " level " << l;
        ASSERT_GE(from[l] + out[l].size(), want[l].second) << n << " level " << l;
        ASSERT_LE(from[l] + out[l].size(), ref[l].size()) << n << " level " << l;
        for (std::size_t k = 0; k < out[l].size(); ++k)
          ASSERT_EQ(out[l][k], ref[l][from[l] + k]) << n << " level " << l << " at " << from[l] + k;
      }
      ASSERT_EQ(level4.size(), ref[4].size()) << n;
      for (std::size_t k = 0; k < level4.size(); ++k) ASSERT_EQ(level4[k], ref[4][k]) << n << " level 4 at " << k;
      // Level 5 made in the sweep: what halve() makes of level 4 (an odd last value dropped).
      ASSERT_EQ(level5.size(), ref[5].size()) << n;
      for (std::size_t k = 0; k < level5.size(); ++k) ASSERT_EQ(level5[k], ref[5][k]) << n << " level 5 at " << k;
      const Buffer halved = halve(level4);
      ASSERT_EQ(halved.size(), level5.size()) << n;
      for (std::size_t k = 0; k < level5.size(); ++k) ASSERT_EQ(level5[k], halved[k]) << n << " level 5 at " << k;
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

TEST_F(Signal, QuantileIsExactOnLongTiedAndSkewedInput) {
  std::mt19937_64 rng(11);
  // Long ones too: the pivot walk wraps around many times, and two selections (not a sort)
  // pick the bracketing pivots.
  for (std::size_t n : {1u, 2u, 100u, 2047u, 2048u, 2049u, 2050u, 2051u, 5000u, 5003u, 16384u, 65536u, 100003u}) {
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

// sum() (inline since the flicker profile sums thousands of short runs) keeps its order: lanes
// i mod 4 summed apart, folded (0 + 2) + (1 + 3), then the tail; a NaN anywhere gives NaN.
TEST(SignalSum, InlineSumKeepsItsPartialSumOrder) {
  for (std::size_t n = 0; n <= 41; ++n) {
    const auto x = random_series(n, 100 + n);
    std::array<double, 4> lane{};
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4)
      for (std::size_t j = 0; j < 4; ++j) lane[j] += x[i + j];
    double expect = (lane[0] + lane[2]) + (lane[1] + lane[3]);
    for (; i < n; ++i) expect += x[i];
    EXPECT_EQ(sum(x), expect) << n;
    for (std::size_t at = 0; at < n; ++at) {
      auto bad = x;
      bad[at] = std::numeric_limits<double>::quiet_NaN();
      EXPECT_TRUE(std::isnan(sum(bad))) << n << " at " << at;
    }
  }
  EXPECT_EQ(sum(std::span<const double>()), 0.0);
}

TEST_F(Signal, CentredAutocorrelationMatchesHighPassMeanAndAcf) {
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

// The radix-sorted reading step against std::sort: quantised, continuous, negative, signed
// zeros, NaN and infinities (skipped), fewer and more than max_count readings.
double step_by_sort(const std::vector<double>& r, std::size_t max_count) {
  std::vector<double> sorted;
  for (std::size_t i = 0; i < r.size() && sorted.size() < max_count; ++i)
    if (std::isfinite(r[i])) sorted.push_back(r[i]);
  std::sort(sorted.begin(), sorted.end());
  double step = 0;
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    const double d = sorted[i] - sorted[i - 1];
    if (d > 1e-9 * (std::abs(sorted[i]) + 1) && (step == 0 || d < step)) step = d;
  }
  return step;
}

TEST(SignalStep, SmallestStepMatchesSortedDifferences) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();
  std::mt19937_64 rng(21);
  for (std::size_t n : {0u, 1u, 2u, 3u, 17u, 500u, 4096u, 5000u})
    for (int kind = 0; kind < 6; ++kind) {
      std::vector<double> r(n);
      for (std::size_t i = 0; i < n; ++i) {
        const double u = std::uniform_real_distribution<double>(0, 1)(rng);
        switch (kind) {
          case 0: r[i] = std::floor(u * 100); break;                  // utilisation, integer percent
          case 1: r[i] = std::round(u * 30000) / 100; break;          // power, 0.01 W
          case 2: r[i] = 1965 + 15 * std::floor(u * 2); break;        // two clock readings
          case 3: r[i] = (u - 0.5) * 1e-3; break;                     // continuous, both signs
          case 4: r[i] = i % 3 == 0 ? 0.0 : (i % 3 == 1 ? -0.0 : std::floor(u * 4) - 2); break;
          default: r[i] = i % 7 == 0 ? kNaN : (i % 11 == 0 ? (i % 2 ? kInf : -kInf) : std::floor(u * 50) * 0.5);
        }
      }
      for (std::size_t cap : {std::size_t{4096}, std::size_t{10}})
        EXPECT_EQ(smallest_step(r, cap), step_by_sort(r, cap)) << n << " kind " << kind << " cap " << cap;
    }
  EXPECT_EQ(smallest_step(std::vector<double>{5, 5, 5}), 0.0);
  // A gap below 1e-9 of the value is no step: 1e12 and 1e12 + 0.001 count as one reading.
  const std::vector<double> big{1e12 + 2000, 1e12, 1e12 + 1e-3};
  EXPECT_EQ(smallest_step(big), step_by_sort(big, 4096));
  EXPECT_GT(smallest_step(big), 1000.0);
}

// The z-score step's residuals and absolute deviations, against the scalar loops they replace
// (bit for bit; -0 and odd lengths included).
TEST(SignalResiduals, SubtractLineAndAbsDeviationMatchScalarLoops) {
  for (std::size_t n : {1u, 2u, 3u, 17u, 1001u, 16384u, 16385u, 100003u}) {
    const auto layout = sample_layout(n);
    const auto y = random_series(n, n);
    std::vector<double> got;
    gather(y, layout, got);
    auto want = got;
    const double intercept = 3.25, slope = -1.0 / 3;
    for (std::size_t k = 0; k < want.size(); ++k)
      want[k] -= intercept + slope * static_cast<double>(static_cast<std::int64_t>(layout.index(k)));
    subtract_line(got, layout, intercept, slope);
    ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(double)), 0) << n;
    got[0] = want[0] = -0.0;
    const double m = got.size() > 1 ? got[1] : 0.0;
    for (double& v : want) v = std::abs(v - m);
    abs_deviation(got, m);
    ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(double)), 0) << n;
  }
}

// The flicker check's shortcut (detect.cpp, profile_resolved): a gap d between two of a subset
// of the first 4,096 finite readings (every 16th) bounds their step from above once
// d > 8192e-9 (max |r| + 1): the other readings split it into gaps of which one counts.
TEST(SignalStep, SubsetStepBoundsTheFullStep) {
  std::mt19937_64 rng(11);
  int used = 0;
  for (int kind = 0; kind < 5; ++kind)
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<double> r(5000);
      for (std::size_t i = 0; i < r.size(); ++i) {
        const double u = std::uniform_real_distribution<double>(0, 1)(rng);
        switch (kind) {
          case 0: r[i] = std::floor(u * 100); break;
          case 1: r[i] = std::round(u * 30000) / 100; break;
          case 2: r[i] = 100 + u * 200; break;
          case 3: r[i] = 10 + (i % 16 == 0 ? std::floor(u * 4) : u * 4); break;  // the subset quantised, the rest not
          default: r[i] = i % 5 == 0 ? std::numeric_limits<double>::quiet_NaN() : 1e9 + std::floor(u * 3) * 0.01;
        }
      }
      double biggest = 0;
      for (std::size_t i = 0, seen = 0; i < r.size() && seen < 4096; ++i)
        if (std::isfinite(r[i])) biggest = std::max(biggest, std::abs(r[i])), ++seen;
      std::vector<double> every16;
      for (std::size_t i = 0, seen = 0; i < r.size() && seen < 4096; ++i)
        if (std::isfinite(r[i]) && seen++ % 16 == 0) every16.push_back(r[i]);
      std::sort(every16.begin(), every16.end());
      const double full = smallest_step(r, 4096);
      for (std::size_t k = 1; k < every16.size(); ++k) {
        const double d = every16[k] - every16[k - 1];
        if (!(d > 8192e-9 * (biggest + 1))) continue;
        ++used;
        ASSERT_GT(full, 0.0) << kind << " " << trial << " " << k;
        ASSERT_LE(full, d) << kind << " " << trial << " " << k;
      }
    }
  EXPECT_GT(used, 5000);  // the shortcut applies to most gaps (not to kind 4: 1e9 needs a gap > 8 k)
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

TEST_F(Signal, RunsAboveMatchesCentredMeanLoop) {
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

// The busy-run sweep's range check (the activity channel is checked there, not in a pass of
// its own): the same runs as without it, and bad readings found at every position.
TEST_F(Signal, RunsAboveWithRangeCheckFindsBadReadingsAnywhere) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();
  std::mt19937_64 rng(11);
  for (std::size_t n = 1; n < 140; ++n) {
    std::vector<double> a(n);
    for (auto& v : a) v = static_cast<double>(std::uniform_int_distribution<int>(0, 100)(rng));
    for (double threshold : {20.0, 50.0, 1e308}) {  // 1e308: the division fallback
      bool inside = false;
      EXPECT_EQ(runs_above(a, threshold, 0, 100.5, inside), runs_above(a, threshold)) << n;
      EXPECT_TRUE(inside) << n;
    }
    for (std::size_t at = 0; at < n; ++at)
      for (double bad : {kNaN, kInf, -kInf, 250.0, -1.0}) {
        auto b = a;
        b[at] = bad;
        bool inside = true;
        runs_above(b, 50.0, 0, 100.5, inside);
        EXPECT_FALSE(inside) << n << " at " << at << " " << bad;
        inside = true;
        runs_above(b, 1e308, 0, 100.5, inside);
        EXPECT_FALSE(inside) << n << " at " << at << " " << bad;
      }
  }
}

// Block subsample: all of a short series; else max_count / 16 blocks of 16 consecutive
// indices, evenly spread from the first sample to near the last.
TEST(SampleLayout, ShortSeriesWholeLongSeriesInEvenBlocks) {
  for (std::size_t n : {0u, 1u, 17u, 16384u}) {
    const auto l = sample_layout(n);
    EXPECT_EQ(l.size(), n);
    for (std::size_t k = 0; k < n; ++k) ASSERT_EQ(l.index(k), k);
  }
  for (std::size_t n : {16385u, 16400u, 100000u, 864000u, 3000001u}) {
    const auto l = sample_layout(n);
    ASSERT_EQ(l.size(), 16384u) << n;
    EXPECT_EQ(l.block, 16u);
    EXPECT_EQ(l.index(0), 0u);
    EXPECT_EQ(l.index(l.size() - 1), n - 1) << n;  // first to last sample
    ASSERT_EQ(l.starts.size(), l.blocks);
    for (std::size_t j = 0; j < l.blocks; ++j)  // the stepped starts are the formula's
      ASSERT_EQ(l.start(j), j * (n - 16) / (l.blocks - 1)) << n << " " << j;
    for (std::size_t j = 1; j < l.blocks; ++j) {   // evenly: spacing differs by at most one
      ASSERT_GE(l.start(j) - l.start(j - 1), 16u) << n << " " << j;  // blocks do not overlap
      ASSERT_LE(l.start(j) - l.start(j - 1), (n - 16) / (l.blocks - 1) + 1) << n << " " << j;
    }
    for (std::size_t k = 1; k < l.size(); ++k) ASSERT_GT(l.index(k), l.index(k - 1)) << n << " " << k;
    std::vector<double> x(n), got;
    for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<double>(i);
    gather(x, l, got);
    ASSERT_EQ(got.size(), l.size());
    for (std::size_t k = 0; k < got.size(); ++k) ASSERT_EQ(got[k], static_cast<double>(l.index(k))) << n << " " << k;
  }
  // quantile_sampled reads the same subsample (exact below max_count).
  std::vector<double> ramp(50000);
  for (std::size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<double>(i);
  const double median = quantile_sampled(ramp, 0.5);
  EXPECT_NEAR(median, 25000, 50000.0 / 1024);
  std::vector<double> short_ramp(ramp.begin(), ramp.begin() + 999);
  EXPECT_EQ(quantile_sampled(short_ramp, 0.5), quantile(short_ramp, 0.5));
}

TEST_F(Signal, FastChecksFindNaNAndInfinityAnywhere) {
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


// Same bits, or both NaN.
template <class A, class B>
void expect_same_bits(const A& a, const B& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    ASSERT_EQ(std::memcmp(&a[i], &b[i], sizeof(double)), 0) << what << " at " << i << ": " << a[i] << " vs " << b[i];
  }
}


// Round 8's quantile (one pivot bracket, then nth_element over the kept values in input order),
// the reference for the second bracket round: the same bits, signed zeros included.
double quantile_one_bracket(const std::vector<double>& x, double q) {
  const std::size_t n = x.size();
  const auto k = static_cast<std::size_t>(std::clamp(q, 0.0, 1.0) * static_cast<double>(n - 1) + 0.5);
  constexpr std::size_t kPivots = 256, kMargin = 20;
  if (n >= 8 * kPivots) {
    std::array<double, kPivots> piv;
    const std::size_t step = static_cast<std::size_t>(0.6180339887498949 * static_cast<double>(n)) | 1;
    for (std::size_t j = 0, at = 0; j < kPivots; ++j) {
      piv[j] = x[at];
      at += step;
      if (at >= n) at -= n;
    }
    const std::size_t at = k * (kPivots - 1) / (n - 1);
    const std::size_t r_lo = at >= kMargin ? at - kMargin : 0, r_hi = std::min(kPivots - 1, at + kMargin);
    std::nth_element(piv.begin(), piv.begin() + static_cast<std::ptrdiff_t>(r_hi), piv.end());
    std::nth_element(piv.begin(), piv.begin() + static_cast<std::ptrdiff_t>(r_lo),
                     piv.begin() + static_cast<std::ptrdiff_t>(r_hi));
    const double lo = piv[r_lo], hi = piv[r_hi];
    std::vector<double> kept;
    std::size_t below = 0, at_lo = 0, at_hi = 0;
    for (double v : x) {
      if (v > lo && v < hi) kept.push_back(v);
      below += v < lo;
      at_lo += v == lo;
      at_hi += v == hi;
    }
    if (lo == hi) at_hi = 0;
    if (k >= below) {
      std::size_t r = k - below;
      if (r < at_lo) return lo;
      r -= at_lo;
      if (r < kept.size()) {
        std::nth_element(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(r), kept.end());
        return kept[r];
      }
      if (r - kept.size() < at_hi) return hi;
    }
  }
  std::vector<double> copy = x;
  std::nth_element(copy.begin(), copy.begin() + static_cast<std::ptrdiff_t>(k), copy.end());
  return copy[k];
}

// The second bracket (over the kept values, when 2,048 or more are kept: inputs of ~13,000 and
// up) returns round 8's bits on every path: sizes around the threshold and 16,384 (the block
// subsample) with every vector tail, continuous values, ties, zeros of both signs where the
// quantile lands (the fall-back to nth_element decides their sign), values on the pivots.
TEST_F(Signal, QuantileSecondBracketMatchesOneBracketSelection) {
  std::mt19937_64 rng(31);
  std::size_t second_round = 0;
  for (std::size_t n : {2047u, 2048u, 12000u, 13100u, 13200u, 16377u, 16378u, 16379u, 16380u, 16381u, 16382u, 16383u,
                        16384u, 16385u, 16391u, 20000u, 65537u})
    for (int kind = 0; kind < 5; ++kind) {
      std::vector<double> x(n);
      for (auto& v : x) {
        const int u = std::uniform_int_distribution<int>(0, 19)(rng);
        const double c = std::uniform_real_distribution<double>(-1, 1)(rng);
        switch (kind) {
          case 0: v = c; break;
          case 1: v = u == 0 ? -0.0 : u == 1 ? 0.0 : c; break;                       // 10 % zeros at the median
          case 2: v = static_cast<double>(u % 7) - 3.0; break;                        // heavy ties
          case 3: v = u < 3 ? (u == 0 ? -0.0 : 0.0) : std::abs(c) * (u < 11 ? -1 : 1);  // 15 % zeros
          default: v = std::round(c * 300) / 100; break;                              // 601 levels, some ties
        }
      }
      second_round += n >= 13200;
      for (double q : {0.0, 0.01, 0.25, 0.5, 0.5 + 0.5 / static_cast<double>(n), 0.77, 0.99, 1.0}) {
        const double got = quantile(x, q), want = quantile_one_bracket(x, q);
        ASSERT_EQ(std::memcmp(&got, &want, sizeof got), 0)
            << "n " << n << " kind " << kind << " q " << q << ": " << got << " vs " << want;
      }
    }
  EXPECT_GT(second_round, 0u);
}

// The block subsample's line sums (partial sums in registers, four blocks' index chains side by
// side) against the loop they replace, bit for bit: block counts that leave 0-3 blocks for the
// tail, a block of 1 (the plain loop), fractional mean indices, an infinite value. (Fails when
// the fast path folds the partial sums in another order: "n 1000 max 64 ... 3829.6441760876396
// vs 3829.6441760876401".)
TEST_F(Signal, BlockLineSumsMatchRunningIndexLoop) {
  std::mt19937_64 rng(5);
  for (std::size_t n : {40u, 1000u, 70000u, 864000u, 3000001u})
    for (std::size_t max_count : {16u, 31u, 32u, 48u, 64u, 80u, 96u, 112u, 4096u, 16368u, 16384u, 16400u}) {
      const SampleLayout layout = sample_layout(n, max_count);
      std::vector<double> sample(layout.size());
      for (auto& v : sample) v = std::uniform_real_distribution<double>(-50, 150)(rng);
      if (sample.size() > 7 && n == 70000) sample[7] = std::numeric_limits<double>::infinity();
      for (double im : {0.0, 0.5 * static_cast<double>(n), 0.5 * static_cast<double>(n) + 0.3183098861837907,
                        static_cast<double>(n) / 3.0}) {
        const auto bl = static_cast<double>(layout.block), tm = 0.5 * (bl - 1);
        std::array<double, 4> sy4{}, sxy4{};
        double want_sxx = 1.25;
        for (std::size_t j = 0, k = 0; j < layout.blocks; ++j) {
          const double d = static_cast<double>(layout.start(j)) + tm - im;
          want_sxx += bl * d * d;
          double x = d - tm;
          for (std::size_t t = 0; t < layout.block; ++t, ++k, x += 1) {
            sy4[t % 4] += sample[k];
            sxy4[t % 4] += x * sample[k];
          }
        }
        const std::vector<double> want{(sy4[0] + sy4[1]) + (sy4[2] + sy4[3]), (sxy4[0] + sxy4[1]) + (sxy4[2] + sxy4[3]),
                                       want_sxx};
        double sy = 0, sxy = 0, sxx = 1.25;
        block_line_sums(sample, layout, im, sy, sxy, sxx);
        expect_same_bits(std::vector<double>{sy, sxy, sxx}, want,
                         "n " + std::to_string(n) + " max " + std::to_string(max_count) + " im " + std::to_string(im));
      }
    }
}


}  // namespace
}  // namespace epochcast::signal
