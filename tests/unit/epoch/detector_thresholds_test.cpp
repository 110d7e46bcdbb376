// Named thresholds of the detector pinned from both sides: each test fails when its constant
// moves past the margin it states (docs/detection.md "Thresholds").
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "epochcast/epoch/detect.hpp"

namespace epochcast {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Trace uniform_trace(std::size_t n, double dt = 0.1) {
  Trace t;
  t.first_timestamp = "2026/12/02 03:00:00.000";
  for (std::size_t i = 0; i < n; ++i) t.time_s.push_back(static_cast<double>(i) * dt);
  return t;
}

// Idle 300 samples, busy 2,000 (idle + contrast), idle 300; white noise of sd 1 on GPU
// utilisation. The busy/idle contrast (99 % quantile less the idle level: the contrast + ~3.9 sd)
// is compared with kMinContrastNoise (8) sample-to-sample noise widths (~1 sd): a contrast of
// 2 sd reads ~6 noise widths, 6 sd ~10, so the test holds for a constant in about (6, 10):
// moved to 5, the 2-sd trace gets a region; moved to 11, the 6-sd one loses it.
Trace busy_idle(double contrast, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, 1);
  Trace t = uniform_trace(2600);
  auto& u = t.channel(Metric::kGpuUtil).values;
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = 40 + (i >= 300 && i < 2300 ? contrast : 0) + g(rng);
  return t;
}

TEST(DetectorThresholds, BusyIdleContrastOfEightNoiseWidths) {
  for (std::uint64_t seed : {1, 2, 3}) {
    const auto none = detect_epochs(busy_idle(2, seed));
    EXPECT_NE(none.reason.find("no busy/idle contrast: whole trace analysed"), std::string::npos) << none.reason;
    EXPECT_EQ(none.training_start_s, 0.0);
    const auto some = detect_epochs(busy_idle(6, seed));
    EXPECT_EQ(some.reason.find("no busy/idle contrast"), std::string::npos) << some.reason;
    EXPECT_NEAR(some.training_start_s, 29.95, 0.5) << some.reason;
    EXPECT_NEAR(some.training_end_s, 229.95, 0.5) << some.reason;
  }
}

// A noise-free ramp from idle (0 %) to busy (100 %) over 100 samples: the region starts where
// the ramp crosses kBusyThreshold (half) of the way, sample 351 of the ramp starting at 300.
// Moved to 0.4 or 0.6 the start moves by 10 samples (1 s), past the 0.5 s allowed.
TEST(DetectorThresholds, BusyRegionEdgesAtHalfTheContrast) {
  Trace t = uniform_trace(3000);
  auto& u = t.channel(Metric::kGpuUtil).values;
  for (std::size_t i = 0; i < u.size(); ++i) {
    const double up = std::clamp((static_cast<double>(i) - 300) / 100, 0.0, 1.0);
    const double down = std::clamp((2700 - static_cast<double>(i)) / 100, 0.0, 1.0);
    u[i] = 100 * std::min(up, down);
  }
  const auto seg = detect_epochs(t);
  EXPECT_NEAR(seg.training_start_s, 35.05, 0.5) << seg.reason;
  EXPECT_NEAR(seg.training_end_s, 264.95, 0.5) << seg.reason;
}

// A channel more than half missing (kMaxMissingFraction = 0.5) is dropped and said; 40 %
// missing is kept (gaps filled). Moved to 0.35 the 40 % channel is dropped too; to 0.65, the
// 60 % one is kept.
TEST(DetectorThresholds, MoreThanHalfMissingDropsAChannel) {
  auto with_missing = [](double share) {
    Trace t = uniform_trace(2000);
    t.channel(Metric::kGpuUtil);
    t.channel(Metric::kPower);
    auto& u = t.find(Metric::kGpuUtil)->values;
    auto& p = t.find(Metric::kPower)->values;
    for (std::size_t i = 0; i < u.size(); ++i) {
      u[i] = i % 100 < 90 ? 95 : 30;
      p[i] = i % 100 < 90 ? 600 : 300;
      if (static_cast<double>(i % 100) < 100 * share) u[i] = kNaN;  // the same share of every 100
    }
    return detect_epochs(t);
  };
  const auto kept = with_missing(0.4);
  EXPECT_EQ(kept.reason.find("gpu_util_pct dropped"), std::string::npos) << kept.reason;
  const auto dropped = with_missing(0.6);
  EXPECT_NE(dropped.reason.find("gpu_util_pct dropped: 60 % missing"), std::string::npos) << dropped.reason;
}

}  // namespace
}  // namespace epochcast
