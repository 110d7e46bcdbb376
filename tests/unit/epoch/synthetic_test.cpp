// The detector on synthetic traces with known truth, and the generator itself.
#include <gtest/gtest.h>

#include <cmath>

#include "epochcast/epoch/detect.hpp"
#include "eval/synthetic.hpp"
#include "eval/truth.hpp"

namespace epochcast {
namespace {

TEST(Synthetic, GeneratorIsDeterministicAndHasTruth) {
  SyntheticSpec spec;
  const auto a = make_synthetic_trace(spec, 42);
  const auto b = make_synthetic_trace(spec, 42);
  const auto c = make_synthetic_trace(spec, 43);
  ASSERT_EQ(a.trace.size(), b.trace.size());
  EXPECT_EQ(a.trace.find(Metric::kPower)->values, b.trace.find(Metric::kPower)->values);
  EXPECT_NE(a.trace.find(Metric::kPower)->values, c.trace.find(Metric::kPower)->values);
  EXPECT_EQ(a.truth.epochs.size(), static_cast<std::size_t>(spec.epochs));
  EXPECT_NEAR(a.truth.period_s, spec.period_s, 0.05 * spec.period_s);
  EXPECT_EQ(a.trace.channels.size(), 6u);
  EXPECT_DOUBLE_EQ(a.trace.time_s.front(), 0.0);
}

// Over 131,072 samples levels 0-3 are stored only as their ACF windows; a 40-sample period
// makes the refinement and the boundary fold read whole low levels (level 0 at least),
// recomputed from the source. Their values must be the ones a whole sweep
// would have stored: the period comes out right,
// and (boundaries chained, not matched against a fixed grid) nearly all 3,600 are confirmed.
TEST(Synthetic, LongTraceWithShortPeriodReadsTheWholeLevelZero) {
  SyntheticSpec spec;
  spec.period_s = 4;  // 40 samples
  spec.epochs = 3600;  // ~144,000 samples
  spec.event_duty = 0.1;
  spec.period_jitter = 0;
  const auto s = make_synthetic_trace(spec, 5);
  ASSERT_GT(s.trace.size(), 140000u);
  DetectOptions options;
  options.whole_trace = true;
  const auto seg = detect_epochs(s.trace, options);
  EXPECT_LE(std::abs(seg.candidate_period_s - s.truth.period_s) / s.truth.period_s, 0.005) << seg.reason;
  ASSERT_TRUE(seg.found) << seg.reason;
  EXPECT_LE(std::abs(seg.period_s - s.truth.period_s) / s.truth.period_s, 0.01) << seg.reason;
  EXPECT_GE(seg.epochs.size(), 3500u);
  EXPECT_NE(seg.reason.find("boundaries match"), std::string::npos) << seg.reason;
}

TEST(Synthetic, BaseCaseFindsPeriodAndBoundaries) {
  SyntheticSpec spec;
  spec.epochs = 8;
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const auto s = make_synthetic_trace(spec, seed);
    const auto seg = detect_epochs(s.trace);
    std::printf("seed %llu: found=%d period=%.3f truth=%.3f conf=%.2f epochs=%zu | %s\n",
                static_cast<unsigned long long>(seed), seg.found, seg.period_s, s.truth.period_s,
                seg.confidence, seg.epochs.size(), seg.reason.c_str());
    ASSERT_TRUE(seg.found) << seg.reason;
    EXPECT_LE(std::abs(seg.period_s - s.truth.period_s) / s.truth.period_s, 0.01);
    EXPECT_LE(testing::median_boundary_error_s(s.truth.epochs, seg.epochs), 0.5);
  }
}

// 500 ms sampling, 5.25 s epochs, 4 epochs (~10 samples per epoch, like effnetb0): whatever is
// found is right (either proposer), some runs are found by their boundary events, and the same
// traces without a signature are never found.
TEST(Synthetic, FewSamplesFewEpochsFoundOnlyWhenRight) {
  SyntheticSpec spec;
  spec.interval_s = 0.5;
  spec.period_s = 5.25;
  spec.epochs = 4;
  int found = 0, by_events = 0, beyond_3pct = 0;
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    const auto s = make_synthetic_trace(spec, seed);
    const auto seg = detect_epochs(s.trace);
    if (!seg.found) {
      EXPECT_FALSE(seg.reason.empty());
      continue;
    }
    ++found;
    by_events += seg.reason.find("boundary events") != std::string::npos;
    // 10.5 samples per epoch: 3 % is a third of a sample. None may be confidently wrong (> 5 %);
    // one find 3.15 % off is seen (seed 8: two proposers at 5.10 and 5.05 s, their mean).
    const double err = std::abs(seg.period_s - s.truth.period_s) / s.truth.period_s;
    EXPECT_LE(err, 0.05) << seed << ": " << seg.reason;
    beyond_3pct += err > 0.03;
    EXPECT_LE(testing::median_boundary_error_s(s.truth.epochs, seg.epochs), 0.5) << seed;
  }
  std::printf("500 ms, 4 epochs: %d/30 found, %d by boundary events, %d beyond 3 %%\n", found, by_events, beyond_3pct);
  EXPECT_LE(beyond_3pct, 1);
  EXPECT_GE(by_events, 1);
  SyntheticSpec none = spec;
  none.event_depth = 0;
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    const auto seg = detect_epochs(make_synthetic_trace(none, seed).trace);
    EXPECT_FALSE(seg.found) << seed << ": " << seg.period_s << " s, " << seg.reason;
  }
}

}  // namespace
}  // namespace epochcast
