#include <gtest/gtest.h>

#include <cmath>

#include "epochcast/trace/trace.hpp"

namespace epochcast {
namespace {

TEST(Trace, ChannelIsCreatedOnceAndFilledWithMissing) {
  Trace t;
  t.time_s = {0.0, 0.1, 0.2, 0.5};
  Channel& c = t.channel(Metric::kPower);
  ASSERT_EQ(c.values.size(), 4u);
  EXPECT_TRUE(std::isnan(c.values[0]));
  c.values[1] = 300.0;
  EXPECT_EQ(t.channel(Metric::kPower).values[1], 300.0);
  EXPECT_EQ(t.channels.size(), 1u);
  EXPECT_EQ(t.find(Metric::kGpuUtil), nullptr);
  EXPECT_NEAR(t.median_interval_s(), 0.1, 1e-12);
  EXPECT_NEAR(t.max_interval_s(), 0.3, 1e-12);
  EXPECT_NEAR(t.duration_s(), 0.5, 1e-12);
}

}  // namespace
}  // namespace epochcast
