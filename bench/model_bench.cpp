// One prediction of the stacked model (all four learners + the meta learner + the interval),
// next to a reference measured in the same run: the same XGBoost booster predicting one row
// the way a C API user commonly does (a DMatrix per call + XGBoosterPredictFromDMatrix).
// Also: the fit on all pairs of the bundled dataset.
#include <benchmark/benchmark.h>
#include <xgboost/c_api.h>

#include <nlohmann/json.hpp>

#include "../src/model/learners.hpp"
#include "../src/model/pair_features.hpp"
#include "epochcast/model/dataset.hpp"
#include "epochcast/model/stacked_model.hpp"

namespace {

using namespace epochcast;

struct Shared {
  GpuCatalog catalog = load_gpu_catalog(EPOCHCAST_SOURCE_DIR "/data/gpus.csv");
  Dataset data = load_dataset(EPOCHCAST_SOURCE_DIR "/data/nvidiasmi_devicequery_all.csv", catalog);
  StackedModel model = fit_model(data, catalog);
};
// Never destroyed: XGBoost's own statics may be gone at exit before ours.
Shared& shared() {
  static Shared* s = new Shared;
  return *s;
}

void BM_PredictOnePair(benchmark::State& state) {
  auto& s = shared();
  const auto& row = s.data.rows[17];
  const GpuSpec& src = *s.catalog.find(row.gpu_id);
  const GpuSpec& tgt = *s.catalog.find("h200");
  for (auto _ : state) {
    Prediction p = s.model.predict(row.features, row.epoch_s, src, tgt);
    benchmark::DoNotOptimize(p.epoch_s);
  }
}
BENCHMARK(BM_PredictOnePair)->Unit(benchmark::kMicrosecond);

// Reference: XGBoost alone, one row through a fresh DMatrix.
void BM_ReferenceXgboostDMatrixOneRow(benchmark::State& state) {
  auto& s = shared();
  const auto j = nlohmann::json::parse(model_to_json(s.model));
  const std::string buffer = j["learners"][0]["state"]["buffer"];
  const std::size_t cols = j["pair_features"].size();
  BoosterHandle booster = nullptr;
  XGBoosterCreate(nullptr, 0, &booster);
  XGBoosterLoadModelFromBuffer(booster, buffer.data(), buffer.size());
  XGBoosterSetParam(booster, "nthread", "1");
  std::vector<float> row(cols, 0.5f);
  const char* config = R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false})";
  for (auto _ : state) {
    DMatrixHandle m = nullptr;
    XGDMatrixCreateFromMat(row.data(), 1, cols, std::numeric_limits<float>::quiet_NaN(), &m);
    bst_ulong const* shape = nullptr;
    bst_ulong dim = 0;
    const float* out = nullptr;
    XGBoosterPredictFromDMatrix(booster, m, config, &shape, &dim, &out);
    benchmark::DoNotOptimize(out);
    XGDMatrixFree(m);
  }
  XGBoosterFree(booster);
}
BENCHMARK(BM_ReferenceXgboostDMatrixOneRow)->Unit(benchmark::kMicrosecond);

void BM_FitAllPairs(benchmark::State& state) {
  auto& s = shared();
  for (auto _ : state) {
    StackedModel m = fit_model(s.data, s.catalog);
    benchmark::DoNotOptimize(m.training_pairs());
  }
}
BENCHMARK(BM_FitAllPairs)->Unit(benchmark::kSecond)->Iterations(1)->MeasureProcessCPUTime();

// Per learner (0 xgboost, 1 kernel ridge, 2 knn, 3 extra_trees): where the time of the two above goes.
struct PerLearner {
  Matrix x;
  std::vector<double> y;
  LearnerConfig config;
  std::vector<std::unique_ptr<Learner>> fitted;  // the shared model's learners, from its file
  PerLearner() {
    auto& s = shared();
    const PairSchema& schema = pair_schema(false);
    const auto pairs = make_pairs(s.data);
    x = Matrix(pairs.size(), schema.names.size());
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      const auto& a = s.data.rows[pairs[i].source];
      const auto& b = s.data.rows[pairs[i].target];
      pair_features(schema, a.features, a.epoch_s, *s.catalog.find(a.gpu_id), *s.catalog.find(b.gpu_id), x.row(i));
      y.push_back(std::log(b.epoch_s / a.epoch_s));
    }
    const FitOptions o;
    config.xgb_rounds = o.xgb_rounds;
    config.xgb_max_depth = o.xgb_max_depth;
    config.xgb_eta = o.xgb_eta;
    config.trees = o.trees;
    config.tree_min_leaf = o.tree_min_leaf;
    config.tree_max_features = o.tree_max_features;
    config.knn_k = o.knn_k;
    config.threads = o.threads;
    const auto j = nlohmann::json::parse(model_to_json(s.model));
    for (const auto& lj : j["learners"]) {
      if (lj["name"] == "knn") config.knn_columns = lj["state"]["columns"].get<std::vector<std::size_t>>();
      if (lj["name"] == "kernel_ridge") {  // one fit with the stack's tuned length scale and λ
        config.kernel_columns = lj["state"]["columns"].get<std::vector<std::size_t>>();
        config.kernel_length_scale = lj["state"]["length_scale"].get<double>();
        config.kernel_lambda = lj["state"]["lambda"].get<double>();
      }
      fitted.push_back(make_learner(lj["name"], config));
      fitted.back()->from_json(lj["state"]);
    }
  }
};
PerLearner& per_learner() {
  static PerLearner* p = new PerLearner;
  return *p;
}

void BM_LearnerPredictOne(benchmark::State& state) {
  auto& p = per_learner();
  const Learner& l = *p.fitted.at(static_cast<std::size_t>(state.range(0)));
  state.SetLabel(l.name());
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(l.predict(p.x.row(i)));
    i = (i + 97) % p.x.rows;  // different rows: no lucky cache
  }
}
BENCHMARK(BM_LearnerPredictOne)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

void BM_LearnerFitAllPairs(benchmark::State& state) {
  auto& p = per_learner();
  for (auto _ : state) {
    auto l = make_learner(p.fitted.at(static_cast<std::size_t>(state.range(0)))->name(), p.config);
    state.SetLabel(l->name());
    l->fit(p.x, p.y, 42);
    benchmark::DoNotOptimize(l.get());
  }
}
// CPU time of the whole process: extra trees fit on two threads.
BENCHMARK(BM_LearnerFitAllPairs)->DenseRange(0, 3)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();

}  // namespace

BENCHMARK_MAIN();
