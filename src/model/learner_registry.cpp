// The learner registry: every base learner by name, for the fit and the model file.
#include <fmt/format.h>

#include <string>

#include "epochcast/core/error.hpp"
#include "learners.hpp"

namespace epochcast {

namespace {
constexpr LearnerEntry kLearners[] = {
    {"xgboost", "gradient-boosted trees, XGBoost C API (xgb_rounds, xgb_eta, xgb_max_depth)", &make_xgboost_learner},
    {"ridge", "linear ridge on standardised features, penalty by generalised cross-validation (--linear-ridge)",
     &make_ridge_learner},
    {"knn", "k nearest neighbours on the scaling columns, inverse-distance weighted (knn_k)", &make_knn_learner},
    {"extra_trees", "extremely randomised trees (trees, tree_min_leaf, tree_max_features)", &make_extra_trees_learner},
    {"kernel_ridge", "RBF kernel ridge on a Nystrom basis of 256 rows, length scale and penalty by grouped CV",
     &make_kernel_ridge_learner},
};
}  // namespace

std::span<const LearnerEntry> learner_registry() { return kLearners; }

std::unique_ptr<Learner> make_learner(const std::string& name, const LearnerConfig& config) {
  std::string known;
  for (const auto& e : kLearners) {
    if (e.name == name) return e.make(config);
    known += (known.empty() ? "" : ", ") + std::string(e.name);
  }
  throw Error(ErrorCode::kParse, fmt::format("unknown learner '{}' (known: {})", name, known));
}

std::vector<std::unique_ptr<Learner>> make_learners(const LearnerConfig& config) {
  std::vector<std::unique_ptr<Learner>> out;
  for (const auto& n : config.learners) out.push_back(make_learner(n, config));
  return out;
}

}  // namespace epochcast
