// The detector on synthetic traces with known truth, and the generator itself.
#include <gtest/gtest.h>

#include <cmath>

#include "epochcast/epoch/detect.hpp"
#include "epochcast/epoch/synthetic.hpp"
#include "truth.hpp"

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

}  // namespace
}  // namespace epochcast
