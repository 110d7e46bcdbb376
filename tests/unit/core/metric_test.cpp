#include <gtest/gtest.h>

#include <set>
#include <string>

#include "epochcast/core/error.hpp"
#include "epochcast/core/metric.hpp"

namespace epochcast {
namespace {

TEST(MetricTable, EveryNameMapsBackToItsRow) {
  for (const auto& row : metric_table()) {
    EXPECT_EQ(metric_by_tag(row.tag), row.id) << row.tag;
    if (!row.smi_name.empty()) EXPECT_EQ(metric_by_smi_name(row.smi_name), row.id) << row.tag;
    if (!row.dmon_name.empty()) EXPECT_EQ(metric_by_dmon_name(row.dmon_name), row.id) << row.tag;
    if (!row.dcgm_name.empty()) EXPECT_EQ(metric_by_dcgm_name(row.dcgm_name), row.id) << row.tag;
    if (row.dcgm_field_id > 0) EXPECT_EQ(metric_by_dcgm_field_id(row.dcgm_field_id), row.id);
  }
}

// The channels detection may vote on: the 15 its own list held when the table took them over
// (src/epoch/detect.cpp kUsable, main 9c748ce). A change here changes what detection reads.
TEST(MetricTable, MayCarryEpochsIsTheDetectorsChannelSet) {
  std::set<Metric> carry;
  for (const auto& row : metric_table())
    if (row.may_carry_epochs) carry.insert(row.id);
  const std::set<Metric> expected = {Metric::kGpuUtil,      Metric::kMemUtil,        Metric::kPower,
                                     Metric::kSmClock,      Metric::kMemClock,       Metric::kMemUsed,
                                     Metric::kHostCpuUtil,  Metric::kHostMemUsed,    Metric::kPcieTx,
                                     Metric::kPcieRx,       Metric::kGrEngineActive, Metric::kSmActive,
                                     Metric::kSmOccupancy,  Metric::kTensorActive,   Metric::kDramActive};
  EXPECT_EQ(carry, expected);
  // A setting or a slow drift is no epoch signal.
  for (Metric m : {Metric::kMemTotal, Metric::kTemperature, Metric::kEnergy, Metric::kPstate})
    EXPECT_FALSE(info(m).may_carry_epochs) << info(m).tag;
}

TEST(MetricTable, TagsAreUnique) {
  std::set<std::string> tags;
  for (const auto& row : metric_table()) EXPECT_TRUE(tags.insert(std::string(row.tag)).second);
  EXPECT_EQ(tags.size(), kMetricCount);
}

TEST(MetricTable, UnknownNamesAreNotOurs) {
  EXPECT_FALSE(metric_by_smi_name("fan.speed"));
  EXPECT_FALSE(metric_by_dmon_name(""));
  EXPECT_FALSE(metric_by_dcgm_name("DCGM_FI_DEV_NOPE"));
  EXPECT_EQ(metric_by_smi_name("clocks_throttle_reasons.active"), Metric::kClockEventReasons);
}

TEST(Error, MessageCarriesFileLineColumnAndField) {
  Error e(ErrorCode::kParse, "not a number: 'abc'", {"trace.csv", 12, 4, "power.draw [W]"});
  EXPECT_STREQ(e.what(), "trace.csv:12:4: field 'power.draw [W]': not a number: 'abc'");
  EXPECT_EQ(e.code(), ErrorCode::kParse);
  EXPECT_EQ(e.detail(), "not a number: 'abc'");
  EXPECT_NE(exit_status(ErrorCode::kParse), 0);
}

}  // namespace
}  // namespace epochcast
