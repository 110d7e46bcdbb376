// Also the private pair-feature header: the prior is checked directly.
#include "../../../src/model/pair_features.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "epochcast/core/error.hpp"
#include "epochcast/model/evaluate.hpp"
#include "epochcast/model/stacked_model.hpp"

namespace epochcast {
namespace {

const std::string kData = EPOCHCAST_SOURCE_DIR "/data/nvidiasmi_devicequery_all.csv";
const std::string kCatalog = EPOCHCAST_SOURCE_DIR "/data/gpus.csv";

// Small learners keep the unit tests quick; the bench and docs use the defaults.
FitOptions quick() {
  FitOptions o;
  o.xgb_rounds = 60;
  o.xgb_eta = 0.15;
  o.trees = 30;
  o.folds = 3;
  return o;
}

struct Fixture : ::testing::Test {
  static void SetUpTestSuite() {
    catalog = new GpuCatalog(load_gpu_catalog(kCatalog));
    data = new Dataset(load_dataset(kData, *catalog));
    model = new StackedModel(fit_model(*data, *catalog, quick()));
  }
  static void TearDownTestSuite() {
    delete model;
    delete data;
    delete catalog;
  }
  static GpuCatalog* catalog;
  static Dataset* data;
  static StackedModel* model;
  static std::string temp(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("epochcast_model_test_" + std::to_string(::getpid()) + "_" + name)).string();
  }
};
GpuCatalog* Fixture::catalog = nullptr;
Dataset* Fixture::data = nullptr;
StackedModel* Fixture::model = nullptr;

TEST_F(Fixture, PredictsEveryLearnerAndAnIntervalAroundTheStack) {
  const DatasetRow& src = data->rows.front();  // p100
  const Prediction p = model->predict(src.features, src.epoch_s, *catalog->find("p100"), *catalog->find("h200"));
  EXPECT_GT(p.epoch_s, 0);
  EXPECT_LT(p.lo_s, p.epoch_s);
  EXPECT_GT(p.hi_s, p.epoch_s);
  ASSERT_EQ(p.per_learner.size(), 4u);
  EXPECT_EQ(p.per_learner[0].learner, "xgboost");
  double total_weight = 0;
  for (double w : model->meta_weights()) {
    EXPECT_GE(w, 0);
    total_weight += w;
  }
  EXPECT_NEAR(total_weight, 1.0, 0.25);  // log-ratio predictions: weights close to an average
  EXPECT_EQ(model->source_gpus_in_training(), (std::vector<std::string>{"a10g", "p100", "t4", "v100"}));
}

TEST_F(Fixture, SaveLoadRoundTripGivesIdenticalPredictions) {
  const std::string path = temp("roundtrip.json");
  save_model(*model, path);
  const StackedModel loaded = load_model(path);
  std::filesystem::remove(path);
  const GpuSpec& v100 = *catalog->find("v100");
  const GpuSpec& t4 = *catalog->find("t4");
  for (std::size_t i = 0; i < data->rows.size(); i += 37) {
    const DatasetRow& r = data->rows[i];
    const Prediction a = model->predict(r.features, r.epoch_s, *catalog->find(r.gpu_id), r.gpu_id == "t4" ? v100 : t4);
    const Prediction b = loaded.predict(r.features, r.epoch_s, *catalog->find(r.gpu_id), r.gpu_id == "t4" ? v100 : t4);
    ASSERT_EQ(a.per_learner.size(), b.per_learner.size());
    for (std::size_t l = 0; l < a.per_learner.size(); ++l)
      EXPECT_DOUBLE_EQ(a.per_learner[l].epoch_s, b.per_learner[l].epoch_s) << a.per_learner[l].learner;
    EXPECT_DOUBLE_EQ(a.epoch_s, b.epoch_s);
    EXPECT_DOUBLE_EQ(a.hi_s, b.hi_s);
  }
}

// The mixed family's legacy tensor share travels in the model file; a format-7 file written
// before it existed (no field) reads as share 1, the behaviour it was written with; a share
// outside (0, 1] is refused naming the file.
TEST_F(Fixture, ModelFileCarriesTheLegacyTensorShare) {
  const std::string text = model_to_json(*model);
  const StackedModel same = model_from_json(text, "same.json");
  EXPECT_DOUBLE_EQ(same.scaling_prior().mixed.legacy_tensor_eff, model->scaling_prior().mixed.legacy_tensor_eff);
  EXPECT_LT(same.scaling_prior().mixed.legacy_tensor_eff, 1.0);
  nlohmann::json j = nlohmann::json::parse(text);
  j["scaling_prior"]["mixed"].erase("legacy_tensor_eff");
  EXPECT_EQ(model_from_json(j.dump(), "older.json").scaling_prior().mixed.legacy_tensor_eff, 1.0);
  j["scaling_prior"]["mixed"]["legacy_tensor_eff"] = 2.0;
  try {
    (void)model_from_json(j.dump(), "bad-share.json");
    FAIL() << "a share above 1 must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().file, "bad-share.json");
    EXPECT_NE(std::string(e.what()).find("legacy_tensor_eff"), std::string::npos) << e.what();
  }
}

TEST_F(Fixture, ModelFileCarriesXGBoostsOwnBufferAndTheSchema) {
  const nlohmann::json j = nlohmann::json::parse(model_to_json(*model));
  EXPECT_EQ(j["format"], "epochcast-model");
  EXPECT_EQ(j["version"], kModelFormatVersion);
  EXPECT_EQ(j["schema_hash"], model_schema_hash(false));
  EXPECT_EQ(j["learners"][0]["name"], "xgboost");
  // XGBoost's JSON model, as XGBoosterSaveModelToBuffer wrote it.
  const auto xgb = nlohmann::json::parse(j["learners"][0]["state"]["buffer"].get<std::string>());
  EXPECT_TRUE(xgb.contains("learner"));
  EXPECT_EQ(j["pair_features"].size(), pair_feature_names(false).size());
}

TEST_F(Fixture, AnotherSchemaOrVersionIsRefusedNamingBoth) {
  nlohmann::json j = nlohmann::json::parse(model_to_json(*model));
  j["schema_hash"] = "0123456789abcdef";
  try {
    (void)model_from_json(j.dump(), "old.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kSchemaMismatch);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("0123456789abcdef"), std::string::npos);
    EXPECT_NE(msg.find(model_schema_hash(false)), std::string::npos);
  }
  j = nlohmann::json::parse(model_to_json(*model));
  j["version"] = kModelFormatVersion + 1;
  try {
    (void)model_from_json(j.dump(), "future.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kSchemaMismatch);
    EXPECT_NE(std::string(e.what()).find(std::to_string(kModelFormatVersion + 1)), std::string::npos);
  }
  // A format-3 file (linear-ridge stack and the older prior) is refused by version, naming
  // both, rather than read with today's learners.
  j["version"] = 3;
  try {
    (void)model_from_json(j.dump(), "format3.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kSchemaMismatch);
    EXPECT_NE(std::string(e.what()).find("version 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("version " + std::to_string(kModelFormatVersion)), std::string::npos)
        << e.what();
  }
}

TEST_F(Fixture, CorruptOrTruncatedModelFileIsAClearError) {
  const std::string text = model_to_json(*model);
  try {
    (void)model_from_json(std::string_view(text).substr(0, text.size() / 2), "cut.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().file, "cut.json");
    EXPECT_GE(e.where().line, 1u);
    EXPECT_GE(e.where().column, 1u);
  }
  // Valid JSON, wrong content: a learner's state damaged.
  nlohmann::json j = nlohmann::json::parse(text);
  j["learners"][3]["state"]["trees"][0]["left"] = nlohmann::json::array({5, 1});
  EXPECT_THROW((void)model_from_json(j.dump(), "damaged.json"), Error);
  j = nlohmann::json::parse(text);
  j["learners"][0]["state"]["buffer"] = "{\"not\": \"xgboost\"}";
  EXPECT_THROW((void)model_from_json(j.dump(), "badxgb.json"), Error);
  j["learners"][0]["state"]["buffer"] = "garbage";
  try {
    (void)model_from_json(j.dump(), "garbage-xgb.json");
    FAIL();
  } catch (const Error& e) {  // bad input, one line, naming the file: not an internal error
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().file, "garbage-xgb.json");
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
  j = nlohmann::json::parse(text);
  j.erase("meta_weights");
  EXPECT_THROW((void)model_from_json(j.dump(), "nometa.json"), Error);
  j = nlohmann::json::parse(text);
  j["meta_weights_unseen_gpu"].erase(0);
  EXPECT_THROW((void)model_from_json(j.dump(), "short-unseen.json"), Error);
  j = nlohmann::json::parse(text);
  j["meta_weights_unseen_gpu"][0] = -0.5;
  EXPECT_THROW((void)model_from_json(j.dump(), "negative-unseen.json"), Error);
  EXPECT_THROW((void)model_from_json("[1,2,3]", "array.json"), Error);
  EXPECT_THROW((void)load_model("/nonexistent/model.json"), Error);
  // Found by fuzzing (tests/fuzz/fuzz_model): a number no double holds is not a JSON syntax
  // error but nlohmann's out_of_range, which escaped the loader (the CLI said "internal").
  try {
    (void)model_from_json("{\"format\": \"epochcast-model\",\n  \"version\": 2e400}", "overflow.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().file, "overflow.json");
    EXPECT_EQ(e.where().line, 2u);
    EXPECT_EQ(e.where().column, 14u);
  }
  // An endless file (found with `predict --model /dev/zero`) stopped at the 256 MiB size cap,
  // after reading it; a device is now refused before reading.
  try {
    (void)load_model("/dev/zero");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("model file '/dev/zero': it is a character device, not a file"),
              std::string::npos)
        << e.what();
  }
}

// Found by reading for the fuzzer (tests/fuzz/fuzz_model): a learner state whose sizes agree
// with each other but not with the schema loaded, and predict() then read past the feature
// row (kNN column 10000 crashed `predict`; ridge and extra trees wider than the row).
TEST_F(Fixture, LearnerStateWiderThanTheSchemaIsRefused) {
  const nlohmann::json good = nlohmann::json::parse(model_to_json(*model));
  auto expect_refused = [](const nlohmann::json& j, const std::string& learner) {
    try {
      (void)model_from_json(j.dump(), "wide.json");
      FAIL() << learner;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse) << e.what();
      EXPECT_EQ(e.where().file, "wide.json");
      EXPECT_EQ(e.where().field, "learners");
      EXPECT_NE(std::string(e.what()).find("learner '" + learner + "' reads"), std::string::npos) << e.what();
    }
  };
  ASSERT_EQ(good["learners"][2]["name"], "knn");
  nlohmann::json j = good;
  j["learners"][2]["state"]["columns"][0] = 10000;
  expect_refused(j, "knn");
  // Linear ridge is in the format-3 stack (FitOptions::kernel_ridge = false).
  FitOptions linear = quick();
  linear.kernel_ridge = false;
  j = nlohmann::json::parse(model_to_json(fit_model(*data, *catalog, linear)));
  ASSERT_EQ(j["learners"][1]["name"], "ridge");
  auto& ridge = j["learners"][1]["state"];
  for (int i = 0; i < 50; ++i) {
    ridge["coef"].push_back(0.5);
    ridge["scaler"]["mean"].push_back(0.0);
    ridge["scaler"]["scale"].push_back(1.0);
  }
  expect_refused(j, "ridge");
  j = good;
  ASSERT_EQ(j["learners"][3]["name"], "extra_trees");
  auto& trees = j["learners"][3]["state"];
  const std::size_t wide = trees["columns"].get<std::size_t>() + 50;
  trees["columns"] = wide;
  trees["fill"] = std::vector<double>(wide, 0.0);
  expect_refused(j, "extra_trees");
  // XGBoost's `columns` disagreeing with its own booster gave an internal error carrying
  // XGBoost's stack trace; now a parse error.
  // Found by fuzz_model (UBSan): nlohmann casts -1.5 to size_t; integers must be integers.
  for (const auto& [learner, field] : std::vector<std::pair<int, std::string>>{{2, "rows"}, {0, "columns"}, {3, "min_leaf"}}) {
    j = good;
    j["learners"][learner]["state"][field] = -1.50226;
    try {
      (void)model_from_json(j.dump(), "float.json");
      FAIL() << field;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse) << e.what();
      EXPECT_NE(std::string(e.what()).find("expected an integer in range"), std::string::npos) << e.what();
    }
  }
  // Found by fuzz_model (UBSan, 2026-12-02): kernel ridge read its columns, rows and cols with
  // get<size_t>() too.
  ASSERT_EQ(good["learners"][1]["name"], "kernel_ridge");
  for (const char* field : {"columns", "rows", "cols"}) {
    j = good;
    auto& value = j["learners"][1]["state"][field];
    (value.is_array() ? value[0] : value) = -1.49119;
    try {
      (void)model_from_json(j.dump(), "float.json");
      FAIL() << field;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse) << e.what();
      EXPECT_NE(std::string(e.what()).find("expected an integer in range"), std::string::npos) << e.what();
    }
  }
  j = good;
  j["learners"][0]["state"]["columns"] = 100000;
  try {
    (void)model_from_json(j.dump(), "wide.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse) << e.what();
    EXPECT_NE(std::string(e.what()).find("the saved booster has"), std::string::npos) << e.what();
  }
}

// Found by fuzzing (tests/fuzz/fuzz_model): XGBoost loads a booster whose tree points past its
// nodes and then reads out of bounds predicting (SEGV inside libxgboost); a cycle would loop.
TEST_F(Fixture, XGBoostTreesPointingOutsideThemselvesAreRefused) {
  const nlohmann::json good = nlohmann::json::parse(model_to_json(*model));
  ASSERT_EQ(good["learners"][0]["name"], "xgboost");
  auto with_tree = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = good;
    nlohmann::json booster = nlohmann::json::parse(j["learners"][0]["state"]["buffer"].get<std::string>());
    nlohmann::json& tree = booster["learner"]["gradient_booster"]["model"]["trees"][0];
    ASSERT_GE(tree["left_children"].size(), 3u);
    ASSERT_NE(tree["left_children"][0], -1);
    edit(tree);
    j["learners"][0]["state"]["buffer"] = booster.dump();
    try {
      (void)model_from_json(j.dump(), "tree.json");
      FAIL() << tree.dump();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse) << e.what();
      EXPECT_EQ(e.where().file, "tree.json");
      EXPECT_NE(std::string(e.what()).find("booster saved in the model file is damaged"), std::string::npos)
          << e.what();
    }
  };
  with_tree([](nlohmann::json& t) { t["right_children"][0] = t["left_children"].size() + 1; });
  with_tree([](nlohmann::json& t) { t["split_indices"][0] = 100000; });
  with_tree([](nlohmann::json& t) {  // children swapped: XGBoost walks to left + 1 (a hang in release)
    std::swap(t["left_children"][0], t["right_children"][0]);
  });
  with_tree([](nlohmann::json& t) {  // node 1 becomes a split whose children lead back to the root
    t["left_children"][1] = 0;
    t["right_children"][1] = 0;
  });
  // Found by fuzz_model: XGBoost's JSON reader takes "[0,00,]" and a string where it expects
  // an integer, then dereferences garbage (SEGV in libxgboost while loading).
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"\"tree_info\":[", "\"tree_info\":[00,"}, {"\"tree_info\":[", "\"tree_info\":[\"x\","},
           {"\"left_children\":[", "\"left_children\":[1.5,"}, {"\"id\":2,", "\"id\":1,"},
           // Found by fuzz_model (SEGV in RegTree::LoadModel, 2026-12-02): parents past the nodes.
           {"\"parents\":[2147483647,", "\"parents\":[21478,"}, {"\"parents\":[2147483647,0", "\"parents\":[2147483647,640473"}}) {
    nlohmann::json j = good;
    std::string buffer = j["learners"][0]["state"]["buffer"].get<std::string>();
    const std::size_t at = buffer.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    buffer.replace(at, from.size(), to);
    j["learners"][0]["state"]["buffer"] = buffer;
    try {
      (void)model_from_json(j.dump(), "xgbjson.json");
      FAIL() << to;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse) << e.what();
      EXPECT_NE(std::string(e.what()).find("damaged"), std::string::npos) << e.what();
    }
  }
  // Found by fuzz_model: XGBoost loads size_leaf_vector 5 but refuses it when predicting
  // (an internal error at predict before); now refused at load.
  {
    nlohmann::json j = good;
    nlohmann::json booster = nlohmann::json::parse(j["learners"][0]["state"]["buffer"].get<std::string>());
    booster["learner"]["gradient_booster"]["model"]["gbtree_model_param"]["size_leaf_vector"] = "5";
    j["learners"][0]["state"]["buffer"] = booster.dump();
    try {
      (void)model_from_json(j.dump(), "leafvec.json");
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse) << e.what();
      EXPECT_NE(std::string(e.what()).find("damaged"), std::string::npos) << e.what();
    }
  }
  // Also found by fuzz_model: a tree count that disagrees with the trees loads, but XGBoost
  // then cannot save it (an internal error before).
  nlohmann::json j = good;
  nlohmann::json booster = nlohmann::json::parse(j["learners"][0]["state"]["buffer"].get<std::string>());
  booster["learner"]["gradient_booster"]["model"]["gbtree_model_param"]["num_trees"] = "0";
  j["learners"][0]["state"]["buffer"] = booster.dump();
  try {
    (void)model_from_json(j.dump(), "count.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse) << e.what();
    EXPECT_NE(std::string(e.what()).find("damaged"), std::string::npos) << e.what();
  }
}

TEST_F(Fixture, DeterministicGivenASeed) {
  const StackedModel again = fit_model(*data, *catalog, quick());
  EXPECT_TRUE(model_to_json(*model) == model_to_json(again)) << "same seed, different model";
  FitOptions other = quick();
  other.seed = 7;
  const StackedModel different = fit_model(*data, *catalog, other);
  EXPECT_FALSE(model_to_json(*model) == model_to_json(different)) << "the seed has no effect";
}

// The out-of-fold and final fits run as one queue on FitOptions::threads workers: the fitted
// learners, weights and intervals must not depend on how many (only `options.threads` differs).
TEST_F(Fixture, SameModelForAnyThreadCount) {
  auto fitted = [&](int threads) {
    FitOptions o = quick();
    o.threads = threads;
    auto j = nlohmann::json::parse(model_to_json(fit_model(*data, *catalog, o)));
    EXPECT_EQ(j["options"]["threads"], threads);
    j["options"].erase("threads");
    return j;
  };
  const auto one = fitted(1);
  EXPECT_EQ(one, fitted(2)) << "two workers changed the model";
  EXPECT_EQ(one, fitted(3)) << "three workers changed the model";
  EXPECT_FALSE(one["learners"].empty());
}

TEST_F(Fixture, PredictIsThreadSafe) {
  const auto& rows = data->rows;
  const GpuSpec& h100 = *catalog->find("h100-sxm");
  std::vector<double> serial;
  for (const auto& r : rows) serial.push_back(model->predict(r.features, r.epoch_s, *catalog->find(r.gpu_id), h100).epoch_s);
  std::vector<std::vector<double>> parallel(4, std::vector<double>(rows.size()));
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (std::size_t i = 0; i < rows.size(); ++i)
        parallel[t][i] = model->predict(rows[i].features, rows[i].epoch_s, *catalog->find(rows[i].gpu_id), h100).epoch_s;
    });
  for (auto& th : threads) th.join();
  for (const auto& p : parallel) EXPECT_EQ(p, serial);
}

TEST_F(Fixture, MissingChannelsAndOutOfRangeFeaturesAreReportedNotCrashed) {
  FeatureRow f = data->rows.front().features;
  for (std::size_t s = 0; s < kStatCount; ++s) f.set(Metric::kTemperature, static_cast<Stat>(s), NAN);
  f.set(Metric::kPower, Stat::kMean, 5000.0);
  const RangeCheck rc = model->check_range(f);
  ASSERT_EQ(rc.missing.size(), 1u);
  EXPECT_EQ(rc.missing[0], "temperature_gpu");
  ASSERT_FALSE(rc.out_of_range.empty());
  EXPECT_NE(rc.out_of_range[0].find("power_drawW_mean"), std::string::npos);
  const Prediction p = model->predict(f, 3.0, *catalog->find("p100"), *catalog->find("a10g"));
  EXPECT_TRUE(std::isfinite(p.epoch_s));
  EXPECT_TRUE(model->check_range(data->rows.front().features).ok());
  EXPECT_THROW((void)model->predict(f, -1.0, *catalog->find("p100"), *catalog->find("a10g")), Error);
  EXPECT_THROW((void)model->predict(f, NAN, *catalog->find("p100"), *catalog->find("a10g")), Error);
}

TEST_F(Fixture, OneGpuTypeOrUnpairedWorkloadsCannotBeFitted) {
  Dataset one = *data;
  std::erase_if(one.rows, [](const DatasetRow& r) { return r.gpu_id != "t4"; });
  try {
    (void)fit_model(one, *catalog, quick());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("at least two"), std::string::npos);
  }
  // Two GPUs but no workload on both: no pairs.
  Dataset split = *data;
  std::erase_if(split.rows, [](const DatasetRow& r) {
    return !((r.gpu_id == "t4" && r.model == "VGG19") || (r.gpu_id == "p100" && r.model == "LeNet5"));
  });
  EXPECT_THROW((void)fit_model(split, *catalog, quick()), Error);
}

// Accuracy with a bound that can fail: leave-one-CNN-model-out with the quick learners.
// Defaults measure 7.7 % (docs/model.md); the quick ones land a little higher.
TEST_F(Fixture, LeaveOneModelOutMapeStaysBelowTheBound) {
  const EvalReport r = evaluate(*data, *catalog, Protocol::kLomo, quick());
  EXPECT_EQ(r.pairs, 1516u);
  EXPECT_EQ(r.fits, 8u);
  EXPECT_LT(r.stack.mape_pct, 9.5);
  EXPECT_GT(r.stack.mape_pct, 1.0);  // a leak would make it implausibly good
  EXPECT_EQ(r.stack.per_target_gpu_mape_pct.size(), 4u);
  EXPECT_GT(r.interval_coverage_pct, 80.0);
  EXPECT_LT(r.interval_coverage_pct, 98.0);
  // The stack should be no worse than its worst learner.
  double worst = 0;
  for (const auto& [name, s] : r.per_learner) worst = std::max(worst, s.mape_pct);
  EXPECT_LT(r.stack.mape_pct, worst);
  // Every scored pair is listed (eval --predictions), from its held-out model's fold, and the
  // scores recomputed from the list are the report's.
  ASSERT_EQ(r.predictions.size(), r.pairs);
  double stack_ape = 0;
  std::vector<double> learner_ape(r.per_learner.size(), 0.0);
  for (const auto& p : r.predictions) {
    ASSERT_EQ(p.learner_s.size(), r.per_learner.size());
    EXPECT_NE(std::find(r.held_out.begin(), r.held_out.end(), p.model), r.held_out.end());
    EXPECT_NE(p.source_gpu, p.target_gpu);
    EXPECT_TRUE(p.workload.starts_with(p.model + "/"));
    stack_ape += std::abs(p.stack_s - p.truth_s) / p.truth_s * 100;
    for (std::size_t l = 0; l < learner_ape.size(); ++l)
      learner_ape[l] += std::abs(p.learner_s[l] - p.truth_s) / p.truth_s * 100;
  }
  const auto n = static_cast<double>(r.predictions.size());
  EXPECT_NEAR(stack_ape / n, r.stack.mape_pct, 1e-9);
  for (std::size_t l = 0; l < learner_ape.size(); ++l)
    EXPECT_NEAR(learner_ape[l] / n, r.per_learner[l].second.mape_pct, 1e-9) << r.per_learner[l].first;
}

TEST_F(Fixture, LeaveOneGpuOutKeepsTheGpuOutOfTraining) {
  // Checked through the protocol's own contract: each held-out GPU's pairs are scored, and a
  // model fitted without it never lists it.
  Dataset no_t4 = *data;
  std::vector<RunPair> pairs;
  for (const auto& p : make_pairs(*data))
    if (data->rows[p.source].gpu_id != "t4" && data->rows[p.target].gpu_id != "t4") pairs.push_back(p);
  const StackedModel m = fit_model_on_pairs(*data, pairs, *catalog, quick());
  for (const auto& g : m.source_gpus_in_training()) EXPECT_NE(g, "t4");
  for (const auto& g : m.target_gpus_in_training()) EXPECT_NE(g, "t4");
}

// The correction is kept whole up to the excess the GPU-held-out folds validated, chosen from
// 0, 0.1, … capped at the largest excess one of those folds showed; beyond it, it fades over
// shrink_span_log. Without GPU folds there is no evidence: nothing is trusted beyond the range.
TEST_F(Fixture, TrustedExcessIsChosenOnGpuFolds) {
  // The largest excess of one dataset GPU over the other three (compute peak at kAuto, bandwidth).
  const std::vector<std::string> ids = data->gpu_ids();
  double largest = 0;
  for (const auto& held : ids) {
    double lo_c = 1e9, hi_c = 0, lo_b = 1e9, hi_b = 0;
    for (const auto& id : ids) {
      if (id == held) continue;
      const GpuSpec& g = *catalog->find(id);
      lo_c = std::min(lo_c, compute_path(Precision::kAuto, g).tflops), hi_c = std::max(hi_c, compute_path(Precision::kAuto, g).tflops);
      lo_b = std::min(lo_b, g.memory_bandwidth_gbs), hi_b = std::max(hi_b, g.memory_bandwidth_gbs);
    }
    const GpuSpec& h = *catalog->find(held);
    const double c = compute_path(Precision::kAuto, h).tflops, b = h.memory_bandwidth_gbs;
    largest = std::max({largest, std::log(lo_c / c), std::log(c / hi_c), std::log(lo_b / b), std::log(b / hi_b)});
  }
  const double trusted = model->trusted_excess_log();
  EXPECT_GE(trusted, 0.0);
  EXPECT_LE(trusted, largest + 1e-9);
  const double steps = trusted / 0.1;
  EXPECT_TRUE(std::abs(steps - std::round(steps)) < 1e-9 || std::abs(trusted - largest) < 1e-9) << trusted;
  // Inside the training range and within the trusted excess: the whole correction.
  const GpuSpec& v100 = *catalog->find("v100");
  EXPECT_EQ(model->correction_shrink(*catalog->find("t4"), v100), 1.0);
  // An fp16 job meets V100's 125 TFLOPS FP16 tensor peak, 3.6x beyond the training GPUs' fp32-code
  // peaks (A10G's TF32 35): less correction than the same pair in fp32 code.
  EXPECT_LT(model->correction_shrink(*catalog->find("t4"), v100, Precision::kFp16), 1.0);
  // Round trip through the model file.
  EXPECT_EQ(model_from_json(model_to_json(*model), "mem").trusted_excess_log(), trusted);
  FitOptions no_gpu_folds = quick();
  no_gpu_folds.meta_gpu_folds = false;
  EXPECT_EQ(fit_model(*data, *catalog, no_gpu_folds).trusted_excess_log(), 0.0);
}

// The learners fit the correction to the Amdahl prior; only the correction is clamped, so a
// GPU far outside the training range (H200) is predicted near the prior, not extrapolated.
TEST_F(Fixture, UnseenGpuIsCarriedByThePriorWithTheWiderInterval) {
  const PairSchema& schema = pair_schema(false);
  const GpuSpec& h200 = *catalog->find("h200");
  const GpuSpec& a10g = *catalog->find("a10g");
  const nlohmann::json j = nlohmann::json::parse(model_to_json(*model));
  const auto clamp = j["log_ratio_clamp"].get<std::vector<double>>();
  EXPECT_EQ(j["prior"], "scaling_prior");
  std::vector<double> x(schema.names.size());
  for (std::size_t i = 0; i < data->rows.size(); i += 11) {
    const DatasetRow& r = data->rows[i];
    const GpuSpec& src = *catalog->find(r.gpu_id);
    pair_features(schema, r.features, r.epoch_s, src, h200, x);
    // H200's TF32 peak is 14x the training GPUs' largest (A10G's 35 TFLOPS), beyond any trusted
    // excess plus ln 4: no correction, the calibrated prior.
    EXPECT_EQ(model->correction_shrink(src, h200), 0.0);
    const double prior = model->prior_log_ratio_for(r.features, x, src, h200, Precision::kAuto);
    const double got = std::log(model->predict(r.features, r.epoch_s, src, h200).epoch_s / r.epoch_s);
    // Meta weights sum to about one, so the stack stays within the widened correction range.
    double wsum = 0;
    for (double w : model->meta_weights_unseen_gpu()) wsum += w;
    EXPECT_GE(got - prior, wsum * clamp[0] - 1e-9) << r.workload;
    EXPECT_LE(got - prior, wsum * clamp[1] + 1e-9) << r.workload;
    EXPECT_LT(prior, 0);  // H200 is faster than every dataset GPU by its specs
  }
  // A target never seen in training gets the interval calibrated on GPU-held-out folds.
  ASSERT_GT(model->unseen_gpu_interval_half_width_log(), model->interval_half_width_log());
  const DatasetRow& r = data->rows.front();
  const Prediction seen = model->predict(r.features, r.epoch_s, *catalog->find(r.gpu_id), a10g);
  const Prediction unseen = model->predict(r.features, r.epoch_s, *catalog->find(r.gpu_id), h200);
  EXPECT_NEAR(std::log(seen.hi_s / seen.epoch_s), model->interval_half_width_log(), 1e-9);
  // Off the training range also the calibrated prior's own leave-one-GPU-out width (shrink 0 here).
  EXPECT_NEAR(std::log(unseen.hi_s / unseen.epoch_s),
              std::max(model->unseen_gpu_interval_half_width_log(), model->scaling_prior().fp32_code.interval_q_log),
              1e-9);
}

// The default stack (FitOptions::kernel_ridge): kernel ridge in ridge's place, and two meta
// weight sets: a pair whose GPUs were both in training is combined with weights from model- and
// workload-grouped folds, one with a GPU outside training with weights that leave kernel ridge
// out (its correction decays to its mean away from the training GPUs). The format-3 stack
// (kernel_ridge = false) has linear ridge and one set.
TEST_F(Fixture, DefaultStackSeenAndUnseenGpusUseTheirOwnMetaWeights) {
  FitOptions o = quick();
  o.kernel_ridge = false;
  const StackedModel linear = fit_model(*data, *catalog, o);
  EXPECT_EQ(linear.learner_names(), (std::vector<std::string>{"xgboost", "ridge", "knn", "extra_trees"}));
  EXPECT_EQ(linear.meta_weights(), linear.meta_weights_unseen_gpu());
  const StackedModel& kr_model = *model;
  const auto names = kr_model.learner_names();
  ASSERT_EQ(names, (std::vector<std::string>{"xgboost", "kernel_ridge", "knn", "extra_trees"}));
  EXPECT_EQ(kr_model.meta_weights_unseen_gpu()[1], 0.0);
  EXPECT_GT(kr_model.meta_weights()[1], 0.0);  // on held-out networks it earns weight
  const PairSchema& schema = pair_schema(false);
  std::vector<double> x(schema.names.size());
  for (const char* target : {"v100", "h200"}) {
    const bool seen = std::string(target) != "h200";
    const auto& w = seen ? kr_model.meta_weights() : kr_model.meta_weights_unseen_gpu();
    for (std::size_t i = 0; i < data->rows.size(); i += 23) {
      const DatasetRow& r = data->rows[i];
      if (r.gpu_id == target) continue;
      const GpuSpec& src = *catalog->find(r.gpu_id);
      pair_features(schema, r.features, r.epoch_s, src, *catalog->find(target), x);
      const double prior = kr_model.prior_log_ratio_for(r.features, x, src, *catalog->find(target), Precision::kAuto);
      const Prediction p = kr_model.predict(r.features, r.epoch_s, src, *catalog->find(target));
      double expect = prior;  // per-learner predictions are prior + clamped correction
      for (std::size_t l = 0; l < names.size(); ++l)
        expect += w[l] * (std::log(p.per_learner[l].epoch_s / r.epoch_s) - prior);
      EXPECT_NEAR(std::log(p.epoch_s / r.epoch_s), expect, 1e-9) << target << " " << r.workload;
    }
  }
  // The file keeps the option and both weight sets; a damaged kernel ridge state is refused.
  const std::string text = model_to_json(kr_model);
  const StackedModel loaded = model_from_json(text, "kr.json");
  EXPECT_TRUE(loaded.options().kernel_ridge);
  EXPECT_EQ(loaded.meta_weights_unseen_gpu(), kr_model.meta_weights_unseen_gpu());
  EXPECT_EQ(model_to_json(loaded), text);
  nlohmann::json bad = nlohmann::json::parse(text);
  bad["learners"][1]["state"]["alpha"].erase(0);
  try {
    (void)model_from_json(bad.dump(), "badkernel.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().file, "badkernel.json");
  }
  bad["learners"][1]["state"].erase("alpha");
  EXPECT_THROW((void)model_from_json(bad.dump(), "nokernel.json"), Error);
  bad = nlohmann::json::parse(text);
  bad["learners"][1]["state"]["columns"][0] = 68;  // not the columns the schema gives it
  EXPECT_THROW((void)model_from_json(bad.dump(), "kernelcolumns.json"), Error);
  bad["learners"][1]["state"]["columns"][0] = 10000;  // past the feature row
  EXPECT_THROW((void)model_from_json(bad.dump(), "kernelwide.json"), Error);
}

// The prior falls back when utilisation channels are missing instead of turning NaN.
TEST(Prior, FallsBackWhenUtilisationChannelsAreMissing) {
  const GpuCatalog catalog = load_gpu_catalog(kCatalog);
  const GpuSpec& t4 = *catalog.find("t4");
  const GpuSpec& v100 = *catalog.find("v100");
  const PairSchema& schema = pair_schema(false);
  std::vector<double> x(schema.names.size());
  FeatureRow f;
  f.set(Metric::kGpuUtil, Stat::kMean, 80.0);
  f.set(Metric::kMemUtil, Stat::kMean, 30.0);
  pair_features(schema, f, 10.0, t4, v100, x);
  const double compute = v100.fp32_tflops / t4.fp32_tflops, bw = v100.memory_bandwidth_gbs / t4.memory_bandwidth_gbs;
  const double clock = v100.max_sm_clock_mhz / t4.max_sm_clock_mhz;
  EXPECT_NEAR(prior_log_ratio(schema, x),
              std::log(0.3 / bw + 0.5 / (std::pow(compute, 0.8) * std::pow(clock, 0.2)) + 0.2), 1e-12);
  f.set(Metric::kMemUtil, Stat::kMean, NAN);
  pair_features(schema, f, 10.0, t4, v100, x);
  EXPECT_NEAR(prior_log_ratio(schema, x), std::log(0.8 / std::sqrt(compute * bw) + 0.2), 1e-12);
  f.set(Metric::kGpuUtil, Stat::kMean, NAN);
  pair_features(schema, f, 10.0, t4, v100, x);
  EXPECT_NEAR(prior_log_ratio(schema, x), -0.5 * std::log(compute * bw), 1e-12);
}

// The compute-busy share's speed-up runs from the SM clock ratio (GPU almost idle: small kernels)
// to the FP32 ratio (always busy); a catalog row without a clock falls back to FP32.
TEST(Prior, ComputeShareScalesFromClockToFp32WithUtilisation) {
  const GpuCatalog catalog = load_gpu_catalog(kCatalog);
  const GpuSpec& p100 = *catalog.find("p100");
  const GpuSpec& a10g = *catalog.find("a10g");
  const PairSchema& schema = pair_schema(false);
  std::vector<double> x(schema.names.size());
  const double compute = a10g.fp32_tflops / p100.fp32_tflops, clock = a10g.max_sm_clock_mhz / p100.max_sm_clock_mhz;
  ASSERT_GT(std::abs(std::log(compute / clock)), 0.1);  // the two ratios differ enough to tell apart
  FeatureRow f;
  f.set(Metric::kMemUtil, Stat::kMean, 0.0);
  f.set(Metric::kGpuUtil, Stat::kMean, 100.0);
  pair_features(schema, f, 10.0, p100, a10g, x);
  EXPECT_NEAR(prior_log_ratio(schema, x), -std::log(compute), 1e-12);
  f.set(Metric::kGpuUtil, Stat::kMean, 10.0);
  pair_features(schema, f, 10.0, p100, a10g, x);
  EXPECT_NEAR(prior_log_ratio(schema, x), std::log(0.1 / (std::pow(compute, 0.1) * std::pow(clock, 0.9)) + 0.9), 1e-12);
  GpuSpec no_clock = a10g;
  no_clock.max_sm_clock_mhz = 0;
  pair_features(schema, f, 10.0, p100, no_clock, x);
  EXPECT_NEAR(prior_log_ratio(schema, x), std::log(0.1 / compute + 0.9), 1e-12);
  // Between the ends the prior is monotone in utilisation: more busy time, more of it sped up.
  double last = 0.0;
  for (double u = 0.0; u <= 100.0; u += 5.0) {
    f.set(Metric::kGpuUtil, Stat::kMean, u);
    pair_features(schema, f, 10.0, p100, a10g, x);
    const double v = prior_log_ratio(schema, x);
    ASSERT_TRUE(std::isfinite(v));
    if (compute > 1 && clock > 1) EXPECT_LE(v, last + 1e-12) << u;
    last = v;
  }
}

// A GPU-held-out fold can leave only a couple of training pairs: fitted, not crashed.
TEST_F(Fixture, GpuHeldOutFoldsWithFewPairsStillFit) {
  Dataset small = *data;
  bool kept_v100 = false;
  std::string keep_workload;
  for (const auto& r : data->rows)
    if (r.model == "VGG19" && r.gpu_id == "v100") {
      keep_workload = r.workload;
      break;
    }
  ASSERT_FALSE(keep_workload.empty());
  std::erase_if(small.rows, [&](const DatasetRow& r) {
    if (r.model != "VGG19" && r.model != "LeNet5") return true;
    if (r.gpu_id == "a10g") return true;
    if (r.gpu_id == "v100") {
      if (r.workload != keep_workload) return true;
      kept_v100 = true;
    }
    return false;
  });
  ASSERT_TRUE(kept_v100);
  const StackedModel m = fit_model(small, *catalog, quick());
  EXPECT_EQ(m.target_gpus_in_training(), (std::vector<std::string>{"p100", "t4", "v100"}));
  const DatasetRow& r = small.rows.front();
  const Prediction p = m.predict(r.features, r.epoch_s, *catalog->find(r.gpu_id), *catalog->find("h200"));
  EXPECT_TRUE(std::isfinite(p.epoch_s));
  EXPECT_GT(p.hi_s, p.epoch_s);
}

// Leave-one-GPU-out with the quick learners: the prior keeps it near the 15 % target (the
// defaults measure ~10 %, docs/model.md; without the prior 20.9 %) and the unseen-GPU interval
// keeps coverage near nominal (44.5 % before it existed).
TEST_F(Fixture, LeaveOneGpuOutStaysNearTheTargetWithCalibratedIntervals) {
  const EvalReport r = evaluate(*data, *catalog, Protocol::kLogo, quick());
  EXPECT_EQ(r.fits, 4u);
  EXPECT_LT(r.stack.mape_pct, 15.0);
  EXPECT_GT(r.interval_coverage_pct, 80.0);
}

}  // namespace
}  // namespace epochcast

namespace epochcast {
namespace {

TEST(DefaultModel, FitsOnceCachesUnderXdgCacheHomeAndKeepsTheNewestSix) {
  const auto dir = std::filesystem::temp_directory_path() / ("epochcast_cache_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "epochcast");
  // Entries left by older builds (other keys), older than the one about to be written.
  for (int i = 0; i < 8; ++i) {
    const auto old = dir / "epochcast" / ("model-old" + std::to_string(i) + ".json");
    std::ofstream(old) << "{}";
    std::filesystem::last_write_time(old, std::filesystem::file_time_type::clock::now() - std::chrono::hours(1 + i));
  }
  std::ofstream(dir / "epochcast" / "notes.txt") << "not a cache entry";
  ::setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  const auto a = default_model();
  const auto b = default_model();
  EXPECT_EQ(a.get(), b.get());  // fitted once per process
  std::size_t entries = 0, valid = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "epochcast")) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("model-")) continue;
    ++entries;
    if (name.starts_with("model-old")) {
      EXPECT_LT(name, "model-old5");  // the oldest were removed
      continue;
    }
    ++valid;
    const StackedModel cached = load_model(e.path().string());  // the cache is a valid model file
    EXPECT_EQ(cached.training_pairs(), a->training_pairs());
  }
  EXPECT_EQ(valid, 1u);
  EXPECT_EQ(entries, 6u);
  EXPECT_TRUE(std::filesystem::exists(dir / "epochcast" / "notes.txt"));  // only model entries are pruned
  EXPECT_EQ(a->training_pairs(), 1516u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace epochcast
