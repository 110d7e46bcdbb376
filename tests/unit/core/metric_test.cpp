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
    if (!row.dataset_name.empty())
      EXPECT_EQ(metric_by_dataset_name(row.dataset_name), row.id) << row.tag;
  }
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
