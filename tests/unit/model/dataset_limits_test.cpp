// Dataset epoch times must be plausible (issue 22): 1e308 s and 1e-300 s were accepted and fitted.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "epochcast/core/error.hpp"
#include "epochcast/model/dataset.hpp"
#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/model/stacked_model.hpp"

#include <nlohmann/json.hpp>

namespace epochcast {
namespace {

const std::string kData = EPOCHCAST_SOURCE_DIR "/data/nvidiasmi_devicequery_all.csv";
const std::string kCatalog = EPOCHCAST_SOURCE_DIR "/data/gpus.csv";

// The bundled dataset's header and first row with its epoch time replaced by `label`.
std::string with_label(const std::string& label, std::size_t& label_column) {
  std::ifstream f(kData);
  std::string header, row;
  std::getline(f, header);
  std::getline(f, row);
  std::vector<std::string> names, cells;
  std::stringstream h(header), r(row);
  for (std::string c; std::getline(h, c, ',');) names.push_back(c);
  for (std::string c; std::getline(r, c, ',');) cells.push_back(c);
  label_column = static_cast<std::size_t>(std::find(names.begin(), names.end(), "one_epoch_average_second") - names.begin());
  if (label_column < cells.size()) cells[label_column] = label;
  std::string out = header + "\n";
  for (std::size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + cells[i];
  return out + "\n";
}

TEST(DatasetLimits, ImplausibleEpochTimesAreRefusedWithTheirPlace) {
  const GpuCatalog catalog = load_gpu_catalog(kCatalog);
  for (const std::string label : {"1e308", "1e-300", "2e7", "0.0001"}) {
    std::size_t column = 0;
    std::istringstream in(with_label(label, column));
    try {
      (void)load_dataset(in, "ds.csv", catalog);
      ADD_FAILURE() << label << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse) << e.what();
      EXPECT_EQ(e.where().file, "ds.csv");
      EXPECT_EQ(e.where().line, 2u);
      EXPECT_GT(e.where().column, 0u);
      EXPECT_EQ(e.where().field, "one_epoch_average_second");
      EXPECT_NE(std::string(e.what()).find("not plausible"), std::string::npos) << e.what();
    }
  }
  std::size_t column = 0;
  std::istringstream ok(with_label("12.5", column));
  EXPECT_EQ(load_dataset(ok, "ds.csv", catalog).rows.size(), 1u);
}

// Model-file values outside what fit can produce are refused, naming the field: an interval
// half-width of 1e308 (a null bound in every answer) and an interval level of 2 were loaded.
TEST(ModelFileLimits, IntervalWidthAndLevelAreRangeChecked) {
  const GpuCatalog catalog = load_gpu_catalog(kCatalog);
  const Dataset ds = load_dataset(kData, catalog);
  FitOptions quick;
  quick.xgb_rounds = 10;
  quick.trees = 10;
  quick.folds = 3;
  quick.meta_gpu_folds = false;
  const std::string text = model_to_json(fit_model(ds, catalog, quick));
  EXPECT_NO_THROW((void)model_from_json(text, "m.json"));
  struct Case {
    const char* what;
    void (*edit)(nlohmann::json&);
    const char* field;
  };
  const Case cases[] = {
      {"half width 1e308", [](nlohmann::json& j) { j["interval"]["half_width_log"] = 1e308; }, "interval"},
      {"unseen half width 50", [](nlohmann::json& j) { j["interval"]["unseen_gpu_half_width_log"] = 50.0; }, "interval"},
      {"level 2", [](nlohmann::json& j) { j["options"]["interval_level"] = 2.0; }, "options.interval_level"},
      {"level 0", [](nlohmann::json& j) { j["options"]["interval_level"] = 0.0; }, "options.interval_level"},
  };
  for (const Case& c : cases) {
    nlohmann::json j = nlohmann::json::parse(text);
    c.edit(j);
    try {
      (void)model_from_json(j.dump(), "bad.json");
      ADD_FAILURE() << c.what << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse) << c.what << ": " << e.what();
      EXPECT_EQ(e.where().field, c.field) << c.what << ": " << e.what();
    }
  }
}

// Learner states a fit cannot produce: an extra-trees forest with no trees (its mean over zero
// trees is NaN) and an XGBoost buffer labelled with a format it is not in.
TEST(ModelFileLimits, EmptyForestAndMislabelledBoosterAreRefused) {
  const GpuCatalog catalog = load_gpu_catalog(kCatalog);
  const Dataset ds = load_dataset(kData, catalog);
  FitOptions quick;
  quick.xgb_rounds = 10;
  quick.trees = 10;
  quick.folds = 3;
  quick.meta_gpu_folds = false;
  const std::string text = model_to_json(fit_model(ds, catalog, quick));
  struct Case {
    const char* learner;
    void (*edit)(nlohmann::json& state);
    const char* says;
  };
  const Case cases[] = {
      {"extra_trees", [](nlohmann::json& st) { st["trees"] = nlohmann::json::array(); }, "no trees"},
      {"xgboost", [](nlohmann::json& st) { st["format"] = "ubj"; }, "'format' is 'ubj'"},
  };
  for (const Case& c : cases) {
    nlohmann::json j = nlohmann::json::parse(text);
    bool edited = false;
    for (auto& l : j["learners"])
      if (l["name"] == c.learner) {
        c.edit(l["state"]);
        edited = true;
      }
    ASSERT_TRUE(edited) << c.learner << " not in the model file";
    try {
      (void)model_from_json(j.dump(), "bad.json");
      ADD_FAILURE() << c.learner << ": accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace epochcast
