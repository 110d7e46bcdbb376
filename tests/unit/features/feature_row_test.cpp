#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "epochcast/core/error.hpp"
#include "epochcast/features/feature_row.hpp"

namespace epochcast {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(Describe, MatchesPandasDescribeOnAKnownVector) {
  // pandas: pd.Series([1, 2, 3, 4, 10]).describe() -> mean 4, std 3.535534, 25% 2, 50% 3, 75% 4
  const std::vector<double> v{10, 2, kNaN, 3, 1, 4};
  const auto s = describe(v);
  EXPECT_DOUBLE_EQ(s[0], 4.0);
  EXPECT_NEAR(s[1], std::sqrt(12.5), 1e-12);
  EXPECT_DOUBLE_EQ(s[2], 1.0);
  EXPECT_DOUBLE_EQ(s[3], 2.0);
  EXPECT_DOUBLE_EQ(s[4], 3.0);
  EXPECT_DOUBLE_EQ(s[5], 4.0);
  EXPECT_DOUBLE_EQ(s[6], 10.0);
}

TEST(Describe, InterpolatesPercentilesLinearly) {
  // numpy.percentile([1, 2, 3, 4], [25, 50, 75]) -> 1.75, 2.5, 3.25
  const std::vector<double> v{4, 3, 2, 1};
  const auto s = describe(v);
  EXPECT_DOUBLE_EQ(s[3], 1.75);
  EXPECT_DOUBLE_EQ(s[4], 2.5);
  EXPECT_DOUBLE_EQ(s[5], 3.25);
}

TEST(Describe, SingleValueHasNaNStdAndEmptyIsAllNaN) {
  const std::vector<double> one{7};
  const auto s = describe(one);
  EXPECT_TRUE(std::isnan(s[1]));
  EXPECT_DOUBLE_EQ(s[0], 7);
  const std::vector<double> none{kNaN, kNaN};
  for (double x : describe(none)) EXPECT_TRUE(std::isnan(x));
}

TEST(FeatureSchema, NamesComeFromTheMetricTableDatasetNames) {
  const auto& names = feature_names();
  ASSERT_EQ(names.size(), feature_metrics().size() * kStatCount);
  const auto i = feature_index(Metric::kGpuUtil, Stat::kMean);
  ASSERT_TRUE(i.has_value());
  EXPECT_EQ(names[*i], std::string(info(Metric::kGpuUtil).dataset_name) + "_mean");
  const auto j = feature_index(Metric::kPower, Stat::kP75);
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(names[*j], std::string(info(Metric::kPower).dataset_name) + "_75");
  EXPECT_EQ(feature_index(names[*j]), j);
  EXPECT_FALSE(feature_index(Metric::kHostCpuUtil, Stat::kMean).has_value());
}

Trace ramp_trace() {
  Trace t;
  t.source = "ramp";
  for (int i = 0; i < 10; ++i) t.time_s.push_back(i * 1.0);
  t.channel(Metric::kGpuUtil);
  t.channel(Metric::kPower);  // add both before taking references: channels may reallocate
  auto& util = *t.find(Metric::kGpuUtil);
  auto& power = *t.find(Metric::kPower);
  for (int i = 0; i < 10; ++i) {
    util.values[static_cast<std::size_t>(i)] = i * 10.0;
    power.values[static_cast<std::size_t>(i)] = 100.0 + i;
  }
  power.values[4] = kNaN;  // a missing sample inside the window is ignored
  return t;
}

TEST(ExtractFeatures, UsesSamplesNearestToTheFirstStartAndLastEnd) {
  const Trace t = ramp_trace();
  Segmentation seg;
  seg.found = true;
  seg.epochs = {{2.2, 4.0}, {4.0, 6.6}};  // nearest samples: t=2 .. t=7
  const FeatureRow f = extract_features(t, seg);
  EXPECT_EQ(f.samples, 6u);
  EXPECT_DOUBLE_EQ(f.get(Metric::kGpuUtil, Stat::kMin), 20.0);
  EXPECT_DOUBLE_EQ(f.get(Metric::kGpuUtil, Stat::kMax), 70.0);
  EXPECT_DOUBLE_EQ(f.get(Metric::kGpuUtil, Stat::kMean), 45.0);
  EXPECT_DOUBLE_EQ(f.get(Metric::kGpuUtil, Stat::kP50), 45.0);
  EXPECT_NEAR(f.get(Metric::kGpuUtil, Stat::kStd), std::sqrt(350.0), 1e-9);  // var of 20..70 step 10
  // power: samples 102, 103, (NaN), 105, 106, 107
  EXPECT_DOUBLE_EQ(f.get(Metric::kPower, Stat::kMean), (102 + 103 + 105 + 106 + 107) / 5.0);
  EXPECT_DOUBLE_EQ(f.get(Metric::kPower, Stat::kP25), 103.0);
}

TEST(ExtractFeatures, MissingChannelsAreNaNNotErrors) {
  const Trace t = ramp_trace();
  const FeatureRow f = extract_features(t, 0.0, 9.0);
  EXPECT_TRUE(f.missing(Metric::kTemperature));
  EXPECT_TRUE(std::isnan(f.get(Metric::kSmClock, Stat::kMean)));
  EXPECT_FALSE(f.missing(Metric::kGpuUtil));
}

TEST(ExtractFeatures, NoEpochsOrBadWindowIsAClearError) {
  const Trace t = ramp_trace();
  Segmentation none;
  none.reason = "no periodic structure";
  try {
    (void)extract_features(t, none);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("no periodic structure"), std::string::npos);
  }
  EXPECT_THROW((void)extract_features(t, 5.0, 1.0), Error);
  EXPECT_THROW((void)extract_features(t, kNaN, 1.0), Error);
  EXPECT_THROW((void)extract_features(Trace{}, 0.0, 1.0), Error);
}

}  // namespace
}  // namespace epochcast
