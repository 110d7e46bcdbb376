#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "epochcast/core/error.hpp"
#include "epochcast/model/dataset.hpp"
#include "epochcast/model/gpu_catalog.hpp"

namespace epochcast {
namespace {

const std::string kData = EPOCHCAST_SOURCE_DIR "/data/nvidiasmi_devicequery_all.csv";
const std::string kCatalog = EPOCHCAST_SOURCE_DIR "/data/gpus.csv";

TEST(GpuCatalog, BundledCatalogHasTheFleetAndTheRightP100Bandwidth) {
  const GpuCatalog c = load_gpu_catalog(kCatalog);
  for (const char* id : {"p100", "v100", "t4", "a10g", "l4", "a100-40gb", "a100-80gb", "h100-sxm", "h200"})
    ASSERT_NE(c.find(id), nullptr) << id;
  // The dataset's column copies p3's value; 2 x 715 MHz x 4096 bit / 8 = 732 GB/s.
  EXPECT_DOUBLE_EQ(c.find("p100")->memory_bandwidth_gbs, 732);
  EXPECT_DOUBLE_EQ(c.find("h200")->memory_bandwidth_gbs, 4800);
  for (const auto& g : c.gpus()) EXPECT_FALSE(g.source.empty()) << g.id;
}

TEST(GpuCatalog, MatchesNvidiaSmiNamesTolerantly) {
  const GpuCatalog c = load_gpu_catalog(kCatalog);
  const std::pair<const char*, const char*> cases[] = {
      {"Tesla T4", "t4"},           {"TeslaT4", "t4"},  // the dataset drops spaces
      {"NVIDIA A10G", "a10g"},      {"Tesla V100-SXM2-16GB", "v100"},
      {"Tesla P100-PCIE-16GB", "p100"}, {"NVIDIA H100 80GB HBM3", "h100-sxm"},
      {"  nvidia  h200 ", "h200"},  {"NVIDIA A100-SXM4-40GB", "a100-40gb"},
      {"NVIDIA A100-SXM4-80GB", "a100-80gb"}, {"NVIDIA L4", "l4"}, {"h200", "h200"}};
  for (auto [name, id] : cases) {
    const auto g = c.match_smi_name(name);
    ASSERT_TRUE(g.has_value()) << name;
    EXPECT_EQ(g->id, id) << name;
  }
  EXPECT_FALSE(c.match_smi_name("NVIDIA GeForce GTX 1080").has_value());
  EXPECT_FALSE(c.match_smi_name("").has_value());
  EXPECT_EQ(c.find_dataset_label("g4dn")->id, "t4");
  EXPECT_EQ(c.find_dataset_label("P3")->id, "v100");
}

TEST(GpuCatalog, BadCatalogNamesLineColumnAndField) {
  const std::string header =
      "id,name,smi_names,dataset_labels,architecture,compute_capability,sm_count,fp32_cores_per_sm,"
      "max_sm_clock_mhz,fp32_tflops,tensor_fp16_tflops,memory_gib,memory_type,memory_bandwidth_gbs,"
      "l2_cache_mib,tdp_w,source\n";
  try {
    (void)load_gpu_catalog_from_string(header + "t4,T4,Tesla T4,g4dn,Turing,7.5,40,64,1590,fast,65,16,GDDR6,320,4,70,x\n",
                                       "bad.csv");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().line, 2u);
    EXPECT_EQ(e.where().field, "fp32_tflops");
    EXPECT_GT(e.where().column, 0u);
  }
  try {
    (void)load_gpu_catalog_from_string("id,name\nt4,T4\n", "short.csv");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().field, "smi_names");
  }
  EXPECT_THROW((void)load_gpu_catalog("/nonexistent/gpus.csv"), Error);
}

TEST(Dataset, LoadsTheBundledCopy) {
  const GpuCatalog c = load_gpu_catalog(kCatalog);
  const Dataset ds = load_dataset(kData, c);
  EXPECT_EQ(ds.rows.size(), 605u);  // PROVENANCE.md: this copy has 605 rows
  EXPECT_EQ(ds.diagnostics.rows_skipped, 0u);
  EXPECT_EQ(ds.models().size(), 8u);
  EXPECT_EQ(ds.gpu_ids().size(), 4u);
  EXPECT_EQ(make_pairs(ds).size(), 1516u);  // PROVENANCE.md: 1516 ordered pairs
  const DatasetRow& first = ds.rows.front();
  EXPECT_EQ(first.gpu_id, "p100");
  EXPECT_EQ(first.model, "MNIST_CNN");
  EXPECT_EQ(first.workload, "MNIST_CNN/32/224");
  EXPECT_DOUBLE_EQ(first.epoch_s, 2.7939);
  EXPECT_DOUBLE_EQ(first.features.get(Metric::kGpuUtil, Stat::kMean), 76.4274193548387);
  EXPECT_DOUBLE_EQ(first.features.get(Metric::kPower, Stat::kMax), 161.27);
  // The dataset has no statistics for the memory clock (a GPU-constant column there).
  EXPECT_TRUE(first.features.missing(Metric::kMemClock));
}

// The real header and first data rows, to craft broken variants from.
struct Sample {
  std::string header;
  std::vector<std::string> rows;
};
Sample sample(int n) {
  std::ifstream in(kData);
  Sample s;
  std::getline(in, s.header);
  std::string line;
  while (n-- > 0 && std::getline(in, line)) s.rows.push_back(line);
  return s;
}
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string c;
  while (std::getline(ss, c, ',')) out.push_back(c);
  return out;
}
std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + v[i];
  return out;
}
std::size_t column_of(const std::string& header, const std::string& name) {
  const auto h = cells(header);
  return static_cast<std::size_t>(std::find(h.begin(), h.end(), name) - h.begin());
}
Dataset load_text(const std::string& text, bool lenient = false) {
  std::istringstream in(text);
  DatasetOptions o;
  o.lenient = lenient;
  return load_dataset(in, "crafted.csv", load_gpu_catalog(kCatalog), o);
}

TEST(DatasetBadInput, NonNumericCellNamesLineColumnAndField) {
  Sample s = sample(3);
  auto c = cells(s.rows[1]);
  const std::size_t col = column_of(s.header, "power_drawW_mean");
  c[col] = "lots";
  s.rows[1] = join(c);
  const std::string text = s.header + "\n" + s.rows[0] + "\n" + s.rows[1] + "\n" + s.rows[2] + "\n";
  try {
    (void)load_text(text);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().file, "crafted.csv");
    EXPECT_EQ(e.where().line, 3u);
    EXPECT_EQ(e.where().field, "power_drawW_mean");
    EXPECT_GT(e.where().column, 100u);
    EXPECT_NE(std::string(e.what()).find("lots"), std::string::npos);
  }
  const Dataset lenient = load_text(text, true);
  EXPECT_EQ(lenient.rows.size(), 2u);
  EXPECT_EQ(lenient.diagnostics.rows_skipped, 1u);
  ASSERT_EQ(lenient.diagnostics.skips.size(), 1u);
  EXPECT_EQ(lenient.diagnostics.skips[0].line, 3u);
}

TEST(DatasetBadInput, MissingIdentityOrLabelColumnIsAnError) {
  Sample s = sample(2);
  for (const std::string drop : {"model", "one_epoch_average_second", "batchsize"}) {
    auto h = cells(s.header);
    const std::size_t col = column_of(s.header, drop);
    std::string text;
    auto without = [&](const std::string& line) {
      auto v = cells(line);
      v.erase(v.begin() + static_cast<long>(col));
      return join(v);
    };
    text = without(s.header) + "\n" + without(s.rows[0]) + "\n";
    if (drop == "one_epoch_average_second") {
      // total_latency_second is a fallback label: drop it too.
      const auto h2 = cells(without(s.header));
      const auto col2 = static_cast<std::size_t>(std::find(h2.begin(), h2.end(), "total_latency_second") - h2.begin());
      auto drop2 = [&](const std::string& line) {
        auto v = cells(line);
        v.erase(v.begin() + static_cast<long>(col2));
        return join(v);
      };
      text = drop2(without(s.header)) + "\n" + drop2(without(s.rows[0])) + "\n";
    }
    try {
      (void)load_text(text);
      FAIL() << drop;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse);
      EXPECT_EQ(e.where().line, 1u);
      EXPECT_FALSE(e.where().field.empty());
    }
  }
}

TEST(DatasetBadInput, MissingFeatureColumnsBecomeNaNAndAreListed) {
  Sample s = sample(2);
  const std::size_t col = column_of(s.header, "temperature_gpu_mean");
  auto without = [&](const std::string& line) {
    auto v = cells(line);
    v.erase(v.begin() + static_cast<long>(col));
    return join(v);
  };
  const Dataset ds = load_text(without(s.header) + "\n" + without(s.rows[0]) + "\n" + without(s.rows[1]) + "\n");
  ASSERT_EQ(ds.rows.size(), 2u);
  EXPECT_TRUE(std::isnan(ds.rows[0].features.get(Metric::kTemperature, Stat::kMean)));
  EXPECT_NE(std::find(ds.diagnostics.missing_columns.begin(), ds.diagnostics.missing_columns.end(),
                      "temperature_gpu_mean"),
            ds.diagnostics.missing_columns.end());
}

TEST(DatasetBadInput, NaNLabelsAndDuplicatesAreCountedSkips) {
  Sample s = sample(3);
  auto c = cells(s.rows[1]);
  c[column_of(s.header, "one_epoch_average_second")] = "nan";
  const std::string text = s.header + "\n" + s.rows[0] + "\n" + join(c) + "\n" + s.rows[2] + "\n" + s.rows[0] + "\n";
  const Dataset ds = load_text(text);
  EXPECT_EQ(ds.rows.size(), 2u);
  EXPECT_EQ(ds.diagnostics.nan_labels, 1u);
  EXPECT_EQ(ds.diagnostics.duplicates, 1u);
  EXPECT_EQ(ds.diagnostics.rows_skipped, 2u);
  EXPECT_NE(ds.diagnostics.skips.back().reason.find("duplicate of line 2"), std::string::npos);
}

TEST(DatasetBadInput, TruncatedRowUnknownGpuAndEmptyFile) {
  Sample s = sample(2);
  const std::string cut = s.rows[1].substr(0, s.rows[1].size() / 2);
  try {
    (void)load_text(s.header + "\n" + s.rows[0] + "\n" + cut);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.where().line, 3u);
    EXPECT_NE(std::string(e.what()).find("column count"), std::string::npos);
  }
  auto c = cells(s.rows[0]);
  c[0] = "tpu-v5";
  try {
    (void)load_text(s.header + "\n" + join(c) + "\n");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.where().field, "Instances");
    EXPECT_NE(std::string(e.what()).find("tpu-v5"), std::string::npos);
  }
  EXPECT_THROW((void)load_text(""), Error);
  EXPECT_THROW((void)load_text("\x01\x02garbage\xff\n\x7f"), Error);
  EXPECT_THROW((void)load_dataset("/nonexistent.csv", load_gpu_catalog(kCatalog)), Error);
}

// Found by fuzzing (tests/fuzz/fuzz_tables): a dataset cell is echoed into the error, so a
// 5000-byte GPU label made a 5 KB message and an escape sequence reached the terminal raw.
TEST(DatasetBadInput, EchoedCellsAreBoundedAndEscaped) {
  Sample s = sample(1);
  auto c = cells(s.rows[0]);
  c[0] = std::string(5000, 'x');
  try {
    (void)load_text(s.header + "\n" + join(c) + "\n");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.where().line, 2u);
    EXPECT_EQ(e.where().field, "Instances");
    EXPECT_LT(std::string(e.what()).size(), 2200u);
    EXPECT_NE(std::string(e.what()).find("bytes in all)"), std::string::npos);
  }
  c[0] = "p\x1b[31m";
  try {
    (void)load_text(s.header + "\n" + join(c) + "\n");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown GPU 'p\\x1b[31m'"), std::string::npos) << e.what();
  }
}

// Found with the CLI (`fit --data /dev/zero`): one endless line was buffered until memory ran
// out (1 GB), then reported as "empty dataset". Now a line past 1 MiB is refused at once.
TEST(DatasetBadInput, EndlessLineIsRefusedAtOneMebibyte) {
  // Since 2026-12-01 a zero byte ends the read at once (binary data), before the 1 MiB cap.
  try {
    (void)load_dataset("/dev/zero", load_gpu_catalog(kCatalog));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().file, "/dev/zero");
    EXPECT_EQ(e.where().line, 1u);
    EXPECT_NE(e.detail().find("binary data (byte 0x00)"), std::string::npos) << e.what();
  }
  try {
    (void)load_text(std::string(2 << 20, 'a'));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_NE(e.detail().find("longer than 1 MiB"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)load_gpu_catalog("/dev/zero"), Error);
  // A last line without a newline is still read.
  Sample s = sample(2);
  EXPECT_EQ(load_text(s.header + "\n" + s.rows[0] + "\n" + s.rows[1]).rows.size(), 2u);
}

// Found in review round 6: a dataset with classic Mac OS line ends (CR only) was one header line
// ("field '1328.0': duplicate column name"); zero bytes inside a row read as part of a cell
// ("wrong column count").
TEST(DatasetBadInput, CrOnlyLineEndsAndZeroBytesAreNamed) {
  Sample s = sample(2);
  std::string text = s.header + "\r" + s.rows[0] + "\r" + s.rows[1] + "\r";
  try {
    (void)load_text(text);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().line, 1u);
    EXPECT_NE(e.detail().find("a carriage return inside a line: CR-only line ends"), std::string::npos) << e.what();
  }
  // CRLF stays fine.
  EXPECT_EQ(load_text(s.header + "\r\n" + s.rows[0] + "\r\n" + s.rows[1] + "\r\n").rows.size(), 2u);
  std::string row = s.rows[1];
  row.insert(row.size() / 2, std::string("\0\0", 2));
  try {
    (void)load_text(s.header + "\n" + s.rows[0] + "\n" + row + "\n");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().line, 3u);
    EXPECT_NE(e.detail().find("binary data (byte 0x00)"), std::string::npos) << e.what();
  }
}

// Review round 6: statistics outside their metric's physical limits were read as given;
// 1e300 then ended `fit` inside XGBoost ("Input data contains inf", exit 70). They are missing
// (NaN) now, counted, the first named; the row stays.
TEST(DatasetBadInput, ImpossibleStatisticsAreMissingCountedAndNamed) {
  Sample s = sample(3);
  const std::size_t util = column_of(s.header, "utilization_gpu_mean");
  const std::size_t power_std = column_of(s.header, "power_drawW_std");
  auto a = cells(s.rows[0]);
  a[util] = "250";
  auto b = cells(s.rows[1]);
  b[util] = "1e300";
  b[power_std] = "-1";
  const Dataset ds = load_text(s.header + "\n" + join(a) + "\n" + join(b) + "\n" + s.rows[2] + "\n");
  ASSERT_EQ(ds.rows.size(), 3u);
  const std::size_t f = *feature_index("utilization_gpu_mean");
  EXPECT_TRUE(std::isnan(ds.rows[0].features.values[f]));
  EXPECT_TRUE(std::isnan(ds.rows[1].features.values[f]));
  EXPECT_FALSE(std::isnan(ds.rows[2].features.values[f]));
  EXPECT_TRUE(std::isnan(ds.rows[1].features.values[*feature_index("power_drawW_std")]));
  EXPECT_EQ(ds.diagnostics.impossible_values, 3u);
  EXPECT_EQ(ds.diagnostics.first_impossible, "line 2, field 'utilization_gpu_mean': '250' (outside 0 to 100 %)");
  // The bundled dataset has none.
  EXPECT_EQ(load_dataset(kData, load_gpu_catalog(kCatalog)).diagnostics.impossible_values, 0u);
}

}  // namespace
}  // namespace epochcast
