// FitOptions: what they mean for the learners, and their form in the model file.
#include "epochcast/model/stacked_model.hpp"

#include "learners.hpp"
#include "pair_features.hpp"
#include "stacked_internal.hpp"

namespace epochcast {

namespace stacked {

LearnerConfig learner_config(const FitOptions& o) {
  LearnerConfig c;
  c.xgb_rounds = o.xgb_rounds;
  c.xgb_max_depth = o.xgb_max_depth;
  c.xgb_eta = o.xgb_eta;
  c.trees = o.trees;
  c.tree_min_leaf = o.tree_min_leaf;
  c.tree_max_features = o.tree_max_features;
  c.knn_k = o.knn_k;
  c.threads = o.threads;
  // kNN measures distance on the features that say how the job scales, not on all of them:
  // fewer, relevant dimensions make neighbours meaningful (and a prediction cheap).
  const auto& names = pair_schema(o.include_memory_features).names;
  const std::string gpu_util = "src." + feature_names()[*feature_index(Metric::kGpuUtil, Stat::kMean)];
  const std::string mem_util = "src." + feature_names()[*feature_index(Metric::kMemUtil, Stat::kMean)];
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    if (n.starts_with("amdahl.") || n.starts_with("ratio.") || n == "src.log_epoch_s" ||
        n == "src.power_mean_over_tdp" || n == "src.sm_clock_mean_over_max" || n == gpu_util ||
        n == mem_util)
      c.knn_columns.push_back(i);
  }
  c.kernel_columns = c.knn_columns;
  // Kernel ridge in ridge's place (FitOptions::kernel_ridge), on the kNN columns.
  if (o.kernel_ridge) c.learners = {"xgboost", "kernel_ridge", "knn", "extra_trees"};
  return c;
}

nlohmann::json options_to_json(const FitOptions& o) {
  return {{"seed", o.seed},
          {"folds", o.folds},
          {"group_folds_by_model", o.group_folds_by_model},
          {"include_memory_features", o.include_memory_features},
          {"residual_over_prior", o.residual_over_prior},
          {"calibrated_prior", o.calibrated_prior},
          {"shrink_span_log", o.shrink_span_log},
          {"meta_gpu_folds", o.meta_gpu_folds},
          {"interval_level", o.interval_level},
          {"xgb_rounds", o.xgb_rounds},
          {"xgb_max_depth", o.xgb_max_depth},
          {"xgb_eta", o.xgb_eta},
          {"trees", o.trees},
          {"tree_min_leaf", o.tree_min_leaf},
          {"tree_max_features", o.tree_max_features},
          {"knn_k", o.knn_k},
          {"kernel_ridge", o.kernel_ridge},
          {"threads", o.threads}};
}

FitOptions options_from_json(const nlohmann::json& j) {
  FitOptions o;
  o.seed = json_integer<std::uint64_t>(j.at("seed"));
  o.folds = json_integer<int>(j.at("folds"));
  o.group_folds_by_model = j.at("group_folds_by_model").get<bool>();
  o.include_memory_features = j.at("include_memory_features").get<bool>();
  o.residual_over_prior = j.at("residual_over_prior").get<bool>();
  o.calibrated_prior = j.at("calibrated_prior").get<bool>();
  o.shrink_span_log = j.at("shrink_span_log").get<double>();
  o.meta_gpu_folds = j.at("meta_gpu_folds").get<bool>();
  o.interval_level = j.at("interval_level").get<double>();
  o.xgb_rounds = json_integer<int>(j.at("xgb_rounds"));
  o.xgb_max_depth = json_integer<int>(j.at("xgb_max_depth"));
  o.xgb_eta = j.at("xgb_eta").get<double>();
  o.trees = json_integer<int>(j.at("trees"));
  o.tree_min_leaf = json_integer<int>(j.at("tree_min_leaf"));
  o.tree_max_features = j.at("tree_max_features").get<double>();
  o.knn_k = json_integer<int>(j.at("knn_k"));
  o.kernel_ridge = j.at("kernel_ridge").get<bool>();
  o.threads = json_integer<int>(j.at("threads"));
  return o;
}

}  // namespace stacked

}  // namespace epochcast
