// Bad input gives found:false with a reason, never a crash or an invented period.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "epochcast/epoch/detect.hpp"
#include "eval/synthetic.hpp"
#include "epochcast/trace/read.hpp"
#include "../../../src/epoch/signal.hpp"

namespace epochcast {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Trace uniform_trace(std::size_t n, double dt = 0.1) {
  Trace t;
  t.first_timestamp = "2026/11/30 12:00:00.000";
  for (std::size_t i = 0; i < n; ++i) t.time_s.push_back(static_cast<double>(i) * dt);
  return t;
}

void expect_abstains(const Segmentation& seg, const std::string& reason_part) {
  EXPECT_FALSE(seg.found);
  EXPECT_EQ(seg.period_s, 0.0);
  EXPECT_TRUE(seg.epochs.empty());
  EXPECT_NE(seg.reason.find(reason_part), std::string::npos) << "reason: " << seg.reason;
}

TEST(BadInput, EmptyTrace) { expect_abstains(detect_epochs(Trace{}), "too short"); }

TEST(BadInput, TenSamples) {
  Trace t = uniform_trace(10);
  auto& u = t.channel(Metric::kGpuUtil).values;
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = i % 3 ? 100 : 0;
  expect_abstains(detect_epochs(t), "too short: 10 samples");
}

TEST(BadInput, ConstantChannels) {
  Trace t = uniform_trace(2000);
  t.channel(Metric::kGpuUtil).values.assign(2000, 100.0);
  t.channel(Metric::kPower).values.assign(2000, 300.0);
  t.channel(Metric::kSmClock).values.assign(2000, 1980.0);
  expect_abstains(detect_epochs(t), "constant");
}

TEST(BadInput, AllMissingChannels) {
  Trace t = uniform_trace(2000);
  t.channel(Metric::kGpuUtil);  // all NaN
  t.channel(Metric::kPower);
  const auto seg = detect_epochs(t);
  expect_abstains(seg, "no usable channel");
  EXPECT_NE(seg.reason.find("100 % missing"), std::string::npos) << seg.reason;
}

TEST(BadInput, NoChannelsAtAll) { expect_abstains(detect_epochs(uniform_trace(500)), "no usable channel"); }

TEST(BadInput, TimestampsGoingBackwards) {
  Trace t = uniform_trace(500);
  t.channel(Metric::kGpuUtil).values.assign(500, 50.0);
  t.time_s[200] = 3.0;
  expect_abstains(detect_epochs(t), "not increasing at sample 201");
}

TEST(BadInput, NaNTimestamp) {
  Trace t = uniform_trace(500);
  t.channel(Metric::kGpuUtil).values.assign(500, 50.0);
  t.time_s[100] = kNaN;
  expect_abstains(detect_epochs(t), "not increasing");
}

TEST(BadInput, AllOneTimestamp) {
  Trace t = uniform_trace(500);
  t.time_s.assign(500, 7.0);
  t.channel(Metric::kGpuUtil).values.assign(500, 50.0);
  expect_abstains(detect_epochs(t), "no sampling interval");
}

TEST(BadInput, HugeTimeSpanIsRefusedNotAllocated) {
  Trace t = uniform_trace(100);
  t.time_s.back() = 1e12;  // one sample 30,000 years later
  t.channel(Metric::kGpuUtil).values.assign(100, 50.0);
  expect_abstains(detect_epochs(t), "too long to analyse");
}

TEST(BadInput, PureNoiseAbstains) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> g(0, 1);
  Trace t = uniform_trace(5000);
  t.channel(Metric::kGpuUtil);
  t.channel(Metric::kPower);  // both first: channel() may reallocate
  auto& u = t.find(Metric::kGpuUtil)->values;
  auto& p = t.find(Metric::kPower)->values;
  for (std::size_t i = 0; i < 5000; ++i) {
    u[i] = std::clamp(90 + 3 * g(rng), 0.0, 100.0);
    p[i] = 400 + 10 * g(rng);
  }
  const auto seg = detect_epochs(t);
  EXPECT_FALSE(seg.found) << seg.reason;
  EXPECT_FALSE(seg.reason.empty());
}

TEST(BadInput, ShorterThanTwoEpochs) {
  SyntheticSpec spec;
  spec.epochs = 1;
  const auto s = make_synthetic_trace(spec, 3);
  const auto seg = detect_epochs(s.trace);
  EXPECT_FALSE(seg.found) << seg.reason;
  EXPECT_FALSE(seg.reason.empty());
}

// Exactly two epochs: not confirmed with the default min_epochs = 3; the estimate is in
// candidate_period_s and the reason. With min_epochs = 2 the caller accepts it.
TEST(BadInput, ExactlyTwoEpochs) {
  SyntheticSpec spec;
  spec.epochs = 2;
  spec.event_depth = 0.6;
  spec.event_duty = 0.1;
  const auto s = make_synthetic_trace(spec, 4);
  const auto seg = detect_epochs(s.trace);
  EXPECT_FALSE(seg.found);
  EXPECT_NE(seg.reason.find("epochs in view"), std::string::npos) << seg.reason;
  EXPECT_NEAR(seg.candidate_period_s, s.truth.period_s, 0.1 * s.truth.period_s);
  DetectOptions two;
  two.min_epochs = 2;
  two.min_confidence = 0;
  const auto seg2 = detect_epochs(s.trace, two);
  ASSERT_TRUE(seg2.found) << seg2.reason;
  EXPECT_NEAR(seg2.period_s, s.truth.period_s, 0.1 * s.truth.period_s);
}

TEST(BadInput, NaNRunsStillFindThePeriod) {
  SyntheticSpec spec;
  spec.epochs = 8;
  auto s = make_synthetic_trace(spec, 8);
  for (auto& c : s.trace.channels)
    for (std::size_t i = 0; i < c.values.size(); ++i)
      if ((i / 7) % 6 == 0) c.values[i] = kNaN;  // 7-sample holes, 1/6 of the trace
  const auto seg = detect_epochs(s.trace);
  ASSERT_TRUE(seg.found) << seg.reason;
  EXPECT_LE(std::abs(seg.period_s - s.truth.period_s) / s.truth.period_s, 0.02);
}

TEST(BadInput, AbsurdValuesAreIgnoredAndCounted) {
  SyntheticSpec spec;
  spec.epochs = 8;
  auto s = make_synthetic_trace(spec, 9);
  auto& u = s.trace.find(Metric::kGpuUtil)->values;
  for (std::size_t i = 0; i < u.size(); i += 23) u[i] = 250;  // util 250 %
  s.trace.find(Metric::kPower)->values[40] = std::numeric_limits<double>::infinity();
  const auto seg = detect_epochs(s.trace);
  ASSERT_TRUE(seg.found) << seg.reason;
  EXPECT_LE(std::abs(seg.period_s - s.truth.period_s) / s.truth.period_s, 0.02);
  EXPECT_NE(seg.reason.find("implausible gpu_util_pct"), std::string::npos) << seg.reason;
}

// Over 16,384 samples the activity channel's levels come from a block subsample and its
// range check rides on the busy-run sweep: bad readings between the blocks are still found,
// counted and repaired.
TEST(BadInput, LongTraceBadActivityReadingsBetweenSubsampleBlocksAreFound) {
  SyntheticSpec spec;
  spec.period_s = 10;
  spec.epochs = 1000;  // 100,000 samples: the blocks hold one in six
  auto s = make_synthetic_trace(spec, 12);
  auto& u = s.trace.find(Metric::kGpuUtil)->values;
  const auto layout = signal::sample_layout(u.size());
  ASSERT_GT(layout.blocks, 1u);
  auto between = [&](std::size_t j) { return (layout.start(j) + layout.block + layout.start(j + 1)) / 2; };
  ASSERT_GT(layout.start(1), 2 * layout.block);
  // Finite implausible readings only: a NaN would also be caught by the z-score sweep.
  for (std::size_t j : {10u, 400u, 900u}) u[between(j)] = 250;
  u[between(600)] = -5;
  const auto seg = detect_epochs(s.trace);
  ASSERT_TRUE(seg.found) << seg.reason;
  EXPECT_LE(std::abs(seg.period_s - s.truth.period_s) / s.truth.period_s, 0.02);
  EXPECT_NE(seg.reason.find("4 implausible gpu_util_pct values ignored"), std::string::npos) << seg.reason;
}

// ... and an activity channel mostly missing outside the subsample is dropped as before, the
// next activity channel (power) taking over.
TEST(BadInput, LongTraceActivityChannelMissingOutsideTheSubsampleIsDropped) {
  SyntheticSpec spec;
  spec.period_s = 10;
  spec.epochs = 1000;  // 100,000 samples: the blocks hold one in six
  auto s = make_synthetic_trace(spec, 13);
  auto& u = s.trace.find(Metric::kGpuUtil)->values;
  const auto layout = signal::sample_layout(u.size());
  ASSERT_GT(layout.blocks, 1u);
  std::vector<bool> keep(u.size(), false);
  for (std::size_t k = 0; k < layout.size(); ++k) keep[layout.index(k)] = true;
  for (std::size_t i = 0; i < 5; ++i) keep[i] = keep[u.size() - 1 - i] = true;
  for (std::size_t i = 0; i < u.size(); ++i)
    if (!keep[i]) u[i] = kNaN;
  const auto seg = detect_epochs(s.trace);
  EXPECT_NE(seg.reason.find("gpu_util_pct dropped"), std::string::npos) << seg.reason;
  EXPECT_TRUE(seg.found) << seg.reason;
  if (seg.found) EXPECT_LE(std::abs(seg.period_s - s.truth.period_s) / s.truth.period_s, 0.02);
}

TEST(BadInput, MismatchedChannelLengthIsSkipped) {
  SyntheticSpec spec;
  spec.epochs = 8;
  auto s = make_synthetic_trace(spec, 10);
  s.trace.find(Metric::kMemUsed)->values.resize(5);  // a malformed channel from a buggy caller
  const auto seg = detect_epochs(s.trace);
  EXPECT_TRUE(seg.found) << seg.reason;
}

// Found by fuzzing (tests/fuzz/fuzz_trace): one row stamped days early re-bases the clock, the
// next row jumps back, and 121 samples spanned a grid of millions of points (8.6 M here, 56 M
// for 65 days: 13 s of CPU under ASan). Now refused before the grid is built.
TEST(BadInput, ClockStepOfDaysIsMostlyGapsNotAHugeGrid) {
  std::string csv = "timestamp, utilization.gpu [%], power.draw [W]\n";
  auto row = [&](const char* day, int tenths) {
    char line[96];
    std::snprintf(line, sizeof line, "2026/11/%s 15:23:%02d.%d00, %d %%, %d.5 W\n", day, 10 + tenths / 10,
                  tenths % 10, tenths % 40 < 30 ? 97 : 5, 200 + tenths % 40);
    csv += line;
  };
  for (int i = 0; i < 60; ++i) row("30", i);
  row("20", 60);
  for (int i = 61; i < 121; ++i) row("30", i);
  const Trace t = read_trace_from_string(csv, "step.smi.csv");
  ASSERT_EQ(t.size(), 121u);
  ASSERT_GT(t.duration_s(), 8 * 86400.0);  // the reader kept the jump as a gap
  expect_abstains(detect_epochs(t), "mostly gaps: 121 samples");
}

// Issue 23, "Bad input": each kind gives found:false with a reason that names what was wrong.

// Every reading outside the metric table's physical limits (util 250 %, power 1e7 W, an SM
// clock of -5 MHz): all counted as implausible, every channel dropped, no period.
TEST(BadInput, AbsurdValuedTraceAbstainsNamingEachChannel) {
  Trace t = uniform_trace(3000);
  t.channel(Metric::kGpuUtil);
  t.channel(Metric::kPower);
  t.channel(Metric::kSmClock);
  auto& u = t.find(Metric::kGpuUtil)->values;
  auto& p = t.find(Metric::kPower)->values;
  auto& c = t.find(Metric::kSmClock)->values;
  for (std::size_t i = 0; i < 3000; ++i) {
    u[i] = i % 50 < 45 ? 250 : 300;  // a "period" of 50 samples, all of it implausible
    p[i] = i % 50 < 45 ? 1e7 : 2e7;
    c[i] = -5;
  }
  const auto seg = detect_epochs(t);
  expect_abstains(seg, "no usable channel");
  for (const char* part : {"3000 implausible gpu_util_pct values ignored", "3000 implausible power_w values ignored",
                           "3000 implausible sm_clock_mhz values ignored", "gpu_util_pct dropped: 100 % missing"})
    EXPECT_NE(seg.reason.find(part), std::string::npos) << part << " / reason: " << seg.reason;
}

// NaN runs in a run without any boundary signature: the holes are gaps, not boundaries, and no
// period is invented from their regular spacing (a 7-sample hole every 42 samples here).
TEST(BadInput, NaNRunsWithoutASignatureInventNoPeriod) {
  SyntheticSpec spec;
  spec.epochs = 6;
  spec.event_depth = 0;  // no validation pass, no checkpoint: nothing marks the boundaries
  auto s = make_synthetic_trace(spec, 21);
  ASSERT_FALSE(s.truth.has_signature);
  for (auto& c : s.trace.channels)
    for (std::size_t i = 0; i < c.values.size(); ++i)
      if ((i / 7) % 6 == 0) c.values[i] = kNaN;
  const auto seg = detect_epochs(s.trace);
  EXPECT_FALSE(seg.found) << seg.reason;
  EXPECT_LT(seg.confidence, 0.5);
  EXPECT_TRUE(seg.epochs.empty());
  EXPECT_FALSE(seg.reason.empty());
}

// A trace that is mostly one long NaN run: the channels more than half missing are dropped and
// said, and what is left (a few hundred samples of one epoch) gives no period.
TEST(BadInput, MostlyOneNaNRunDropsTheChannelsAndSaysSo) {
  SyntheticSpec spec;
  spec.epochs = 8;
  auto s = make_synthetic_trace(spec, 22);
  const std::size_t n = s.trace.size();
  for (auto& c : s.trace.channels)
    for (std::size_t i = n / 10; i < n; ++i) c.values[i] = kNaN;  // the last 90 % missing
  const auto seg = detect_epochs(s.trace);
  expect_abstains(seg, "no usable channel");
  EXPECT_NE(seg.reason.find("gpu_util_pct dropped: 90 % missing"), std::string::npos) << seg.reason;
}

// Just under the 24-sample floor (grid.hpp kMinSamples) nothing is said; at it, the detector
// runs (and, one epoch long, says why it has no period rather than refusing the trace).
TEST(BadInput, FewerThanMinSamples) {
  auto make = [](std::size_t n) {
    Trace t = uniform_trace(n);
    auto& u = t.channel(Metric::kGpuUtil).values;
    for (std::size_t i = 0; i < n; ++i) u[i] = i % 8 < 6 ? 95 : 20;
    return t;
  };
  expect_abstains(detect_epochs(make(23)), "too short: 23 samples (need at least 24)");
  const auto at = detect_epochs(make(24));
  EXPECT_FALSE(at.found);
  EXPECT_EQ(at.reason.find("trace too short"), std::string::npos) << at.reason;
  EXPECT_FALSE(at.reason.empty());
}

}  // namespace
}  // namespace epochcast
