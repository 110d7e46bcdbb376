#include "epochcast/service/prices.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <set>

#include "epochcast/core/error.hpp"

namespace epochcast {
namespace {

constexpr const char* kHeader =
    "provider,instance,gpu,gpu_count,region,on_demand_usd_h,spot_usd_h,as_of,source\n";

Error parse_error(const std::string& body) {
  try {
    (void)parse_price_catalog(std::string(kHeader) + body, "p.csv");
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error for: " << body;
  return Error(ErrorCode::kInternal, "none");
}

TEST(PriceCatalog, BundledFileLoadsWithEveryRowAttributed) {
  const PriceCatalog catalog = load_price_catalog(default_price_catalog_path());
  ASSERT_GE(catalog.rows().size(), 20u);
  std::set<std::string> gpus;
  for (const auto& row : catalog.rows()) {
    EXPECT_FALSE(row.source.empty()) << row.instance;
    EXPECT_EQ(row.as_of.size(), 10u) << row.instance;
    gpus.insert(row.gpu);
  }
  for (const char* gpu : {"t4", "a10g", "v100", "p100", "l4", "a100-40gb", "a100-80gb", "h100-sxm"})
    EXPECT_TRUE(gpus.count(gpu)) << gpu;
  // g4dn.xlarge is the field notes' reference figure.
  const auto t4 = catalog.for_gpu("t4");
  ASSERT_FALSE(t4.empty());
  bool found = false;
  for (const auto& row : t4)
    if (row.instance == "g4dn.xlarge") {
      found = true;
      EXPECT_DOUBLE_EQ(row.on_demand_usd_h, 0.526);
    }
  EXPECT_TRUE(found);
}

TEST(PriceCatalog, GpuShareDividesMultiGpuInstances) {
  const PriceCatalog c = parse_price_catalog(
      std::string(kHeader) +
          "aws,p4d.24xlarge,A100-40GB,8,us-east-1,32.0,12.8,2024-06-01,x\n"
          "gcp,a2-highgpu-1g,A100-40GB,1,us-central1,3.67,,2024-06-01,y\n",
      "p.csv");
  const auto rows = c.for_gpu("A100-40GB");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].instance, "a2-highgpu-1g");  // 3.67 < 32/8 = 4.0: cheapest first
  EXPECT_DOUBLE_EQ(rows[1].gpu_share_on_demand_usd_h(), 4.0);
  ASSERT_TRUE(rows[1].gpu_share_spot_usd_h().has_value());
  EXPECT_DOUBLE_EQ(*rows[1].gpu_share_spot_usd_h(), 1.6);
  EXPECT_FALSE(rows[0].spot_usd_h.has_value());
  EXPECT_TRUE(c.for_gpu("H200").empty());
}

TEST(PriceCatalog, ColumnsInAnyOrderCrlfCommentsAndBom) {
  const PriceCatalog c = parse_price_catalog(
      "\xEF\xBB\xBFsource,as_of,spot_usd_h,on_demand_usd_h,region,gpu_count,gpu,instance,provider\r\n"
      "# a comment\r\n\r\n"
      "src,2024-01-02,,1.5,r,2,T4,i,aws\r\n",
      "p.csv");
  ASSERT_EQ(c.rows().size(), 1u);
  EXPECT_EQ(c.rows()[0].provider, "aws");
  EXPECT_EQ(c.rows()[0].gpu_count, 2);
  EXPECT_DOUBLE_EQ(c.rows()[0].gpu_share_on_demand_usd_h(), 0.75);
}

TEST(PriceCatalog, BadPriceNamesFileLineColumnAndField) {
  const Error e = parse_error("aws,g4dn.xlarge,T4,1,us-east-1,abc,,2024-06-01,x\n");
  EXPECT_EQ(e.code(), ErrorCode::kParse);
  EXPECT_EQ(e.where().file, "p.csv");
  EXPECT_EQ(e.where().line, 2u);
  EXPECT_EQ(e.where().column, 32u);
  EXPECT_EQ(e.where().field, "on_demand_usd_h");
  EXPECT_NE(std::string(e.what()).find("p.csv:2:32"), std::string::npos) << e.what();
}

TEST(PriceCatalog, RejectsEachKindOfBadCell) {
  EXPECT_EQ(parse_error("aws,i,T4,0,r,1,,2024-06-01,x\n").where().field, "gpu_count");
  EXPECT_EQ(parse_error("aws,i,T4,1.5,r,1,,2024-06-01,x\n").where().field, "gpu_count");
  EXPECT_EQ(parse_error("aws,i,T4,1,r,-1,,2024-06-01,x\n").where().field, "on_demand_usd_h");
  EXPECT_EQ(parse_error("aws,i,T4,1,r,nan,,2024-06-01,x\n").where().field, "on_demand_usd_h");
  EXPECT_EQ(parse_error("aws,i,T4,1,r,1,0,2024-06-01,x\n").where().field, "spot_usd_h");
  EXPECT_EQ(parse_error("aws,i,T4,1,r,1,,June 2024,x\n").where().field, "as_of");
  EXPECT_EQ(parse_error("aws,i,,1,r,1,,2024-06-01,x\n").where().field, "gpu");
  EXPECT_EQ(parse_error("aws,i,T4,1,r,1,,2024-06-01\n").where().line, 2u);  // short row
  const Error dup = parse_error("aws,i,T4,1,r,1,,2024-06-01,x\naws,i,T4,1,r,2,,2024-06-01,x\n");
  EXPECT_EQ(dup.where().line, 3u);
  EXPECT_NE(std::string(dup.what()).find("duplicate"), std::string::npos);
}

TEST(PriceCatalog, MissingColumnAndEmptyFileAreParseErrors) {
  try {
    (void)parse_price_catalog("provider,instance,gpu\n", "p.csv");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().field, "gpu_count");
  }
  EXPECT_THROW((void)parse_price_catalog("", "p.csv"), Error);
  try {
    (void)load_price_catalog("/nonexistent/prices.csv");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
  }
  // Found with the CLI (`predict --prices /dev/zero`): "out of memory", exit 70, after 2 GB.
  try {
    (void)load_price_catalog("/dev/zero");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);  // was read to the 16 MiB cap; a device is refused before reading
    EXPECT_NE(std::string(e.what()).find("price catalog '/dev/zero': it is a character device, not a file"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace epochcast

namespace epochcast {
namespace {

// Plausible ranges (price_limits(), data/PRICES.md): a price in $/s or $/min, or a typo with
// extra digits, is refused naming file, line, column, value and range; the limits themselves
// load, as does the bundled file (BundledFileLoadsWithEveryRowAttributed).
TEST(PriceCatalog, ValuesOutsideThePlausibleRangeAreRefusedWithTheRange) {
  const std::pair<const char*, const char*> cases[] = {
      {"aws,i,T4,1,r,0.000146,,2024-06-01,x\n", "on_demand_usd_h"},  // 0.526 $/h in $/s
      {"aws,i,T4,1,r,52600,,2024-06-01,x\n", "on_demand_usd_h"},
      {"aws,i,T4,1,r,1,0.005,2024-06-01,x\n", "spot_usd_h"},
      {"aws,i,T4,65,r,1,,2024-06-01,x\n", "gpu_count"},
  };
  for (auto [row, field] : cases) {
    const Error e = parse_error(row);
    SCOPED_TRACE(e.what());
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().file, "p.csv");
    EXPECT_EQ(e.where().line, 2u);
    EXPECT_GE(e.where().column, 1u);
    EXPECT_EQ(e.where().field, field);
    EXPECT_NE(e.detail().find("outside the plausible range"), std::string::npos);
  }
  const Error e = parse_error("aws,i,T4,1,r,52600,,2024-06-01,x\n");
  EXPECT_NE(e.detail().find("52600 $/h is outside the plausible range 0.01 to 10000 $/h"), std::string::npos)
      << e.what();
  for (const PriceLimit& limit : price_limits()) {
    if (limit.column == "gpu_count") continue;
    for (double ok : {limit.min, limit.max}) {
      const std::string row = fmt::format("aws,i,T4,1,r,{},{},2024-06-01,x\n", limit.column == "spot_usd_h" ? 1 : ok,
                                          limit.column == "spot_usd_h" ? fmt::format("{}", ok) : "");
      EXPECT_NO_THROW((void)parse_price_catalog(std::string(kHeader) + row, "p.csv")) << row;
    }
  }
}

TEST(PriceCatalog, APriceBeyondADoubleSaysOutOfRange) {
  for (const char* value : {"1e309", "-1e309", "1e-400"}) {
    const Error e = parse_error(fmt::format("aws,i,T4,1,r,{},,2024-06-01,x\n", value));
    EXPECT_EQ(e.where().field, "on_demand_usd_h");
    EXPECT_NE(e.detail().find(fmt::format("out of range of a double: '{}'", value)), std::string::npos) << e.what();
  }
  EXPECT_NE(parse_error("aws,i,T4,1,r,abc,,2024-06-01,x\n").detail().find("'abc' is not a number"),
            std::string::npos);
}

}  // namespace
}  // namespace epochcast
