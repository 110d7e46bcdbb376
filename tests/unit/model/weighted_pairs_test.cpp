// RunPair::weight in the stacked fit: a pair of weight w fits close to w copies of it, the
// weight is part of the training data's fingerprint, and a bad weight is refused naming the pair.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "epochcast/core/error.hpp"
#include "epochcast/model/stacked_model.hpp"

namespace epochcast {
namespace {

const std::string kWeightData = EPOCHCAST_SOURCE_DIR "/data/nvidiasmi_devicequery_all.csv";
const std::string kWeightCatalog = EPOCHCAST_SOURCE_DIR "/data/gpus.csv";

FitOptions small_fit() {
  FitOptions o;
  o.xgb_rounds = 30;
  o.trees = 20;
  o.folds = 3;
  return o;
}

TEST(WeightedPairs, WeightThreeFitsLikeThreeCopiesAndIsFingerprinted) {
  const GpuCatalog catalog = load_gpu_catalog(kWeightCatalog);
  const Dataset ds = load_dataset(kWeightData, catalog);
  const std::vector<RunPair> pairs = make_pairs(ds);
  // Every third pair counts 3 times: once with weight 3, or as three copies.
  std::vector<RunPair> weighted, copies;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    RunPair p = pairs[i];
    if (i % 3 == 0) {
      for (int k = 0; k < 3; ++k) copies.push_back(p);
      p.weight = 3;
    } else {
      copies.push_back(p);
    }
    weighted.push_back(p);
  }
  const StackedModel a = fit_model_on_pairs(ds, weighted, catalog, small_fit());
  const StackedModel b = fit_model_on_pairs(ds, copies, catalog, small_fit());
  const StackedModel plain = fit_model_on_pairs(ds, pairs, catalog, small_fit());
  EXPECT_EQ(a.training_pairs(), pairs.size());
  EXPECT_EQ(b.training_pairs(), copies.size());
  EXPECT_NE(a.data_fingerprint(), plain.data_fingerprint());  // the weights are part of what was fitted
  EXPECT_EQ(a.out_of_fold_log_residuals().size(), pairs.size());
  // Mean |log(a / b)| over every pair: the copies' fit against the weighted one, and against the
  // unweighted one (which the weights must beat).
  double gap_weighted = 0, gap_plain = 0;
  for (const RunPair& p : pairs) {
    const DatasetRow& s = ds.rows[p.source];
    const GpuSpec& sg = *catalog.find(s.gpu_id);
    const GpuSpec& tg = *catalog.find(ds.rows[p.target].gpu_id);
    const double ref = b.predict(s.features, s.epoch_s, sg, tg).epoch_s;
    gap_weighted += std::abs(std::log(a.predict(s.features, s.epoch_s, sg, tg).epoch_s / ref));
    gap_plain += std::abs(std::log(plain.predict(s.features, s.epoch_s, sg, tg).epoch_s / ref));
  }
  gap_weighted /= static_cast<double>(pairs.size());
  gap_plain /= static_cast<double>(pairs.size());
  EXPECT_LT(gap_weighted, 0.6 * gap_plain) << "weighted " << gap_weighted << ", unweighted " << gap_plain;
}

TEST(WeightedPairs, ANonPositiveWeightIsRefusedNamingThePair) {
  const GpuCatalog catalog = load_gpu_catalog(kWeightCatalog);
  const Dataset ds = load_dataset(kWeightData, catalog);
  std::vector<RunPair> pairs = make_pairs(ds);
  pairs[5].weight = 0;
  try {
    static_cast<void>(fit_model_on_pairs(ds, pairs, catalog, small_fit()));
    FAIL() << "a weight of 0 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("training pair 5"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace epochcast
