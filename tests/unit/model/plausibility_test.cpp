// Bad numbers in the model stage's inputs: values out of a double's range ("out of range", not
// "not a number") in the dataset, the GPU catalog and model JSON; GPU catalog figures outside
// their plausible physical range; the fingerprint of the data a model is fitted on.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "epochcast/core/error.hpp"
#include "epochcast/model/dataset.hpp"
#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/model/stacked_model.hpp"

namespace epochcast {
namespace {

const std::string kData = EPOCHCAST_SOURCE_DIR "/data/nvidiasmi_devicequery_all.csv";
const std::string kCatalog = EPOCHCAST_SOURCE_DIR "/data/gpus.csv";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The catalog text with one cell (row `row`, 1 = first GPU; column by name) replaced.
std::string catalog_with(const std::string& column, const std::string& value, std::size_t row = 1) {
  std::istringstream in(slurp(kCatalog));
  std::string line, out;
  std::vector<std::string> header;
  for (std::size_t n = 0; std::getline(in, line); ++n) {
    if (n == 0) {
      std::stringstream h(line);
      for (std::string c; std::getline(h, c, ',');) header.push_back(c);
    } else if (n == row) {
      // The numeric columns come before the quoted source cell: split up to it.
      std::vector<std::string> cells;
      std::size_t pos = 0;
      for (std::size_t i = 0; i + 1 < header.size(); ++i) {
        const std::size_t comma = line.find(',', pos);
        cells.push_back(line.substr(pos, comma - pos));
        pos = comma + 1;
      }
      const std::string rest = line.substr(pos);
      for (std::size_t i = 0; i < cells.size(); ++i)
        if (header[i] == column) cells[i] = value;
      line.clear();
      for (const auto& c : cells) line += c + ",";
      line += rest;
    }
    out += line + "\n";
  }
  return out;
}

Error catalog_error(const std::string& text) {
  try {
    (void)load_gpu_catalog_from_string(text, "cat.csv");
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error";
  return Error(ErrorCode::kInternal, "none");
}

TEST(GpuCatalogLimits, BundledCatalogIsInsideEveryLimit) {
  const GpuCatalog c = load_gpu_catalog(kCatalog);  // throws if not
  EXPECT_EQ(c.gpus().size(), 23u);
  EXPECT_EQ(gpu_spec_limits().size(), 14u);
}

// Each limit, just outside on both sides: refused with file, line, column, value and range;
// the limit itself is accepted.
TEST(GpuCatalogLimits, EveryColumnRefusesValuesOutsideItsRange) {
  for (const GpuSpecLimit& limit : gpu_spec_limits()) {
    const std::string column(limit.column);
    SCOPED_TRACE(column);
    for (const double bad : {limit.min / 2, limit.max * 2}) {
      const std::string value = fmt::format("{}", bad);
      const Error e = catalog_error(catalog_with(column, value, 3));
      SCOPED_TRACE(e.what());
      EXPECT_EQ(e.code(), ErrorCode::kParse);
      EXPECT_EQ(e.where().file, "cat.csv");
      EXPECT_EQ(e.where().line, 4u);  // header, p100, v100, t4
      EXPECT_EQ(e.where().field, column);
      EXPECT_GE(e.where().column, 1u);
      EXPECT_NE(e.detail().find(value), std::string::npos);
      EXPECT_NE(e.detail().find(fmt::format("plausible range {} to {}", limit.min, limit.max)), std::string::npos);
    }
    // A tensor peak at the column's minimum (or FP32 at its maximum) puts the row's tensor peak
    // below its FP32 rate: refused by that rule instead
    // (GpuCatalogPrecision.TensorBelowFp32IsRefusedWithLineColumnAndField).
    for (const double ok : {limit.min, limit.max})
      if (!(column.starts_with("tensor_") && ok == limit.min) && !(column == "fp32_tflops" && ok == limit.max))
        EXPECT_NO_THROW((void)load_gpu_catalog_from_string(catalog_with(column, fmt::format("{}", ok), 3), "cat.csv"));
  }
}

TEST(GpuCatalogLimits, UnitSlipsAreCaught) {
  // H200 bandwidth in TB/s, FP32 in GFLOPS, memory in MiB, TDP in kW.
  const std::pair<const char*, const char*> slips[] = {
      {"memory_bandwidth_gbs", "4.8"}, {"fp32_tflops", "67000"}, {"memory_gib", "144384"}, {"tdp_w", "0.7"}};
  for (auto [column, value] : slips) {
    const Error e = catalog_error(catalog_with(column, value, 9));
    EXPECT_EQ(e.where().field, column) << e.what();
    EXPECT_EQ(e.where().line, 10u) << e.what();
  }
}

TEST(OutOfRange, CatalogNumberBeyondADoubleSaysOutOfRange) {
  const Error e = catalog_error(catalog_with("fp32_tflops", "1e309"));
  EXPECT_EQ(e.where().field, "fp32_tflops");
  EXPECT_EQ(e.where().line, 2u);
  EXPECT_NE(e.detail().find("out of range of a double: '1e309'"), std::string::npos) << e.what();
  const Error tiny = catalog_error(catalog_with("fp32_tflops", "1e-400"));
  EXPECT_NE(tiny.detail().find("out of range of a double: '1e-400'"), std::string::npos) << tiny.what();
  const Error word = catalog_error(catalog_with("fp32_tflops", "fast"));
  EXPECT_NE(word.detail().find("expected a positive number, got 'fast'"), std::string::npos) << word.what();
}

TEST(OutOfRange, DatasetNumberBeyondADoubleSaysOutOfRange) {
  const GpuCatalog catalog = load_gpu_catalog(kCatalog);
  const std::string text = slurp(kData);
  const std::size_t header_end = text.find('\n');
  std::string header = text.substr(0, header_end);
  // The label of the first data row, whichever column it is.
  std::vector<std::string> names;
  {
    std::stringstream h(header);
    for (std::string c; std::getline(h, c, ',');) names.push_back(c);
  }
  const std::size_t label = std::find(names.begin(), names.end(), "one_epoch_average_second") - names.begin();
  ASSERT_LT(label, names.size());
  const std::size_t row_end = text.find('\n', header_end + 1);
  std::string row = text.substr(header_end + 1, row_end - header_end - 1);
  ASSERT_EQ(row.find('"'), std::string::npos) << "the test splits on commas";
  std::vector<std::string> cells;
  {
    std::stringstream r(row);
    for (std::string c; std::getline(r, c, ',');) cells.push_back(c);
  }
  cells[label] = "1e309";
  std::string bad = header + "\n";
  for (std::size_t i = 0; i < cells.size(); ++i) bad += (i ? "," : "") + cells[i];
  bad += "\n";
  std::istringstream in(bad);
  try {
    (void)load_dataset(in, "ds.csv", catalog);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().file, "ds.csv");
    EXPECT_EQ(e.where().line, 2u);
    EXPECT_EQ(e.where().field, "one_epoch_average_second");
    EXPECT_NE(e.detail().find("out of range of a double: '1e309'"), std::string::npos) << e.what();
  }
}

// ---- the data fingerprint ----

FitOptions quick() {
  FitOptions o;
  o.xgb_rounds = 10;
  o.trees = 10;
  o.folds = 3;
  o.meta_gpu_folds = false;
  return o;
}

TEST(DataFingerprint, SameNumbersSameFingerprintAnyChangeAnother) {
  const GpuCatalog catalog = load_gpu_catalog(kCatalog);
  Dataset ds = load_dataset(kData, catalog);
  const auto pairs = make_pairs(ds);
  const std::string base = training_data_fingerprint(ds, pairs, catalog);
  EXPECT_EQ(base.size(), 24u);
  EXPECT_EQ(base.rfind("fnv1a64:", 0), 0u);
  EXPECT_EQ(training_data_fingerprint(load_dataset(kData, catalog), pairs, catalog), base);

  // One statistic of one row used by a pair, one epoch time: the pair count stays.
  Dataset stat = ds;
  stat.rows[pairs[7].source].features.values[3] += 1;
  EXPECT_EQ(make_pairs(stat).size(), pairs.size());
  EXPECT_NE(training_data_fingerprint(stat, pairs, catalog), base);
  Dataset label = ds;
  label.rows[pairs[7].target].epoch_s *= 1.01;
  EXPECT_NE(training_data_fingerprint(label, pairs, catalog), base);
  // A catalog figure of a GPU in training.
  std::vector<GpuSpec> specs = catalog.gpus();
  specs[2].memory_bandwidth_gbs += 1;  // t4
  EXPECT_NE(training_data_fingerprint(ds, pairs, GpuCatalog(specs, "other")), base);
  // Fewer pairs.
  const std::vector<RunPair> fewer(pairs.begin(), pairs.end() - 1);
  EXPECT_NE(training_data_fingerprint(ds, fewer, catalog), base);
  // A catalog row no pair names (h200) does not matter; display names do not either.
  specs = catalog.gpus();
  specs.back().tdp_w = 1000;
  specs[0].name = "renamed";
  EXPECT_EQ(training_data_fingerprint(ds, pairs, GpuCatalog(specs, "other")), base);
}

TEST(DataFingerprint, FittedModelCarriesItThroughItsFile) {
  const GpuCatalog catalog = load_gpu_catalog(kCatalog);
  const Dataset ds = load_dataset(kData, catalog);
  const StackedModel m = fit_model(ds, catalog, quick());
  EXPECT_EQ(m.data_fingerprint(), training_data_fingerprint(ds, make_pairs(ds), catalog));
  const std::string text = model_to_json(m);
  const StackedModel back = model_from_json(text, "m.json");
  EXPECT_EQ(back.data_fingerprint(), m.data_fingerprint());
  EXPECT_EQ(model_to_json(back), text);

  // A file without the field (written before it existed) loads, with the data unknown.
  nlohmann::json j = nlohmann::json::parse(text);
  ASSERT_TRUE(j["training"].contains("data_fingerprint"));
  j["training"].erase("data_fingerprint");
  EXPECT_EQ(model_from_json(j.dump(), "old.json").data_fingerprint(), "");
  // A malformed one is refused, naming the field.
  for (const nlohmann::json& bad : {nlohmann::json(42), nlohmann::json("sha256:abc"), nlohmann::json("fnv1a64:XYZ")}) {
    j["training"]["data_fingerprint"] = bad;
    try {
      (void)model_from_json(j.dump(), "bad.json");
      ADD_FAILURE() << bad.dump();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse);
      EXPECT_EQ(e.where().field, "data_fingerprint") << e.what();
    }
  }
}

TEST(OutOfRange, ModelJsonNumberBeyondADoubleNamesItsKey) {
  const std::pair<const char*, const char*> cases[] = {
      {"{\"format\": \"epochcast-model\",\n  \"version\": 2e400}", "version"},
      {"{\"a\": {\"b\": [1, 2,\n -3e999]}}", "a.b[2]"},
      {"{\"a\": [[1], {\"c\": 1e400}]}", "a[1].c"},
  };
  for (auto [text, field] : cases) {
    try {
      (void)model_from_json(text, "overflow.json");
      ADD_FAILURE() << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse);
      EXPECT_EQ(e.where().field, field) << e.what();
      EXPECT_NE(e.detail().find("out of range of a double"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace epochcast
