// One prediction of the stacked model (all four learners + the meta learner + the interval),
// next to a reference measured in the same run: the same XGBoost booster predicting one row
// the way a C API user commonly does (a DMatrix per call + XGBoosterPredictFromDMatrix).
// Also: the fit on all pairs of the bundled dataset.
#include <benchmark/benchmark.h>
#include <xgboost/c_api.h>

#include <nlohmann/json.hpp>

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
BENCHMARK(BM_FitAllPairs)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
