// The coarse-to-fine ACF level search: fine levels are left out only once the coarse ones
// bracket a long period, never when the period is short, and leaving them out changes nothing
// that matters on a long-period trace.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../../../src/epoch/detect_internal.hpp"
#include "epochcast/epoch/detect.hpp"
#include "eval/synthetic.hpp"

namespace epochcast {
namespace {

struct Both {
  Segmentation skip, full;
  std::size_t finest_skip = 0, finest_full = 0;
};

Both detect_both(const Trace& trace) {
  Both b;
  detail::set_acf_level_skip(false);
  b.full = detect_epochs(trace);
  b.finest_full = detail::last_skipped_acf_levels();
  detail::set_acf_level_skip(true);
  b.skip = detect_epochs(trace);
  b.finest_skip = detail::last_skipped_acf_levels();
  return b;
}

// 2-minute epochs at 10 Hz (1,200 samples, found on level 7): levels whose longest lag is
// under a quarter of that are left out, and the answer is the one with every level.
TEST(AcfLevelSkip, LongPeriodLeavesFineLevelsOutWithTheSameAnswer) {
  SyntheticSpec spec;
  spec.period_s = 120;
  spec.epochs = 30;
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const auto s = make_synthetic_trace(spec, seed);
    const auto b = detect_both(s.trace);
    EXPECT_EQ(b.finest_full, 0u);
    EXPECT_GE(b.finest_skip, 3u) << "seed " << seed;
    ASSERT_TRUE(b.full.found) << b.full.reason;
    ASSERT_TRUE(b.skip.found) << b.skip.reason;
    EXPECT_LE(std::abs(b.skip.period_s - b.full.period_s), 1e-3 * b.full.period_s)
        << "seed " << seed << ": " << b.skip.period_s << " vs " << b.full.period_s;
    EXPECT_LE(std::abs(b.skip.period_s - s.truth.period_s), 0.01 * s.truth.period_s);
    EXPECT_EQ(b.skip.epochs.size(), b.full.epochs.size());
  }
}

// Short periods (5 s = 50 samples, 4 s = 40 samples, many epochs): their multiples rival the
// coarse levels' best peak, so no level is left out and the answer is bit for bit the same.
TEST(AcfLevelSkip, ShortPeriodsKeepEveryLevel) {
  for (double period : {4.0, 5.0}) {
    SyntheticSpec spec;
    spec.period_s = period;
    spec.epochs = 400;
    for (std::uint64_t seed : {1u, 2u}) {
      const auto s = make_synthetic_trace(spec, seed);
      const auto b = detect_both(s.trace);
      EXPECT_EQ(b.finest_skip, 0u) << "period " << period << " seed " << seed;
      ASSERT_TRUE(b.skip.found) << b.skip.reason;
      EXPECT_EQ(b.skip.period_s, b.full.period_s);
      EXPECT_EQ(b.skip.confidence, b.full.confidence);
      EXPECT_EQ(b.skip.epochs.size(), b.full.epochs.size());
    }
  }
}

// The flicker profile's runs of samples per bin are made once per window length and period and
// reused by the next channel (detect.cpp, FoldRuns): every call through the shared cache, in an
// order that changes the length, the period or both between calls and comes back to earlier
// ones, returns the bits of a call with its runs made afresh. (Fails when the cache is reused
// without comparing the period: "n 70000 period 6002.5: 20.156468531468533 vs 20.36508392891372".
// Only periods over 1,024 samples, 4+ samples per bin, take the runs.)
TEST(FlickerProfile, SharedBinRunsGiveTheAmplitudeOfFreshOnes) {
  std::mt19937_64 rng(17);
  std::vector<std::vector<double>> channels(3);
  for (auto& c : channels) {
    c.resize(200000);
    for (std::size_t i = 0; i < c.size(); ++i)
      c[i] = std::round(50 + 20 * std::sin(static_cast<double>(i) * 0.00105) +
                        std::normal_distribution<double>(0, 3)(rng));
  }
  std::size_t calls = 0;
  for (int round = 0; round < 2; ++round)
    for (std::size_t n : {70000u, 70000u, 65536u, 200000u, 1000u})
      for (double period : {5996.034284838618, 5996.034284838618, 6002.5, 1100.0, 40000.0, 600.25, 2.5})
        for (const auto& c : channels) {
          const std::span<const double> raw(c.data(), n);
          const double shared = detail::profile_amplitude(raw, period, true);
          const double fresh = detail::profile_amplitude(raw, period, false);
          ASSERT_EQ(std::memcmp(&shared, &fresh, sizeof shared), 0)
              << "n " << n << " period " << period << ": " << shared << " vs " << fresh;
          ++calls;
        }
  EXPECT_EQ(calls, 210u);
}

}  // namespace
}  // namespace epochcast
