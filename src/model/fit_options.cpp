// The fit's settings table (fit_parameters.hpp), what FitOptions mean for the learners, and
// their form in the model file.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <type_traits>

#include "epochcast/model/fit_parameters.hpp"
#include "epochcast/model/stacked_model.hpp"
#include "learners.hpp"
#include "pair_features.hpp"
#include "stacked_internal.hpp"

namespace epochcast {

namespace {

using F = FitParameter::Flag;
constexpr double kMaxSeed = 18446744073709551615.0;

// Ranges: what the fit is known to handle in reasonable time and memory, not what is useful
// (ParametersDoc / FitParameters tests check the edges are refused or taken).
const FitParameter kParameters[] = {
    {"seed", &FitOptions::seed, 0, kMaxSeed, F::kValue, "--seed",
     "random seed: folds, Nystrom basis, trees, XGBoost subsampling (the fit is deterministic given it)"},
    {"folds", &FitOptions::folds, 2, 10, F::kValue, "--folds",
     "out-of-fold folds of the meta learner's grouped fold sets (model- and workload-grouped)"},
    {"group_folds_by_model", &FitOptions::group_folds_by_model, 0, 1, F::kNone, "",
     "group the meta learner's folds by CNN model (false: by workload); model file only"},
    {"include_memory_features", &FitOptions::include_memory_features, 0, 1, F::kSetsTrue, "--memory-features",
     "also use memory used/free/total (they describe the framework, not the workload; off by default)"},
    {"residual_over_prior", &FitOptions::residual_over_prior, 0, 1, F::kSetsFalse, "--no-prior",
     "learners fit the correction to the physical prior (the flag: log(target/source) itself)"},
    {"calibrated_prior", &FitOptions::calibrated_prior, 0, 1, F::kSetsFalse, "--format5-prior",
     "off the training GPUs blend to the scaling prior calibrated on the public throughput table (the flag: "
     "model format 5's parameter-free amdahl.memory_clock_split alone)"},
    {"shrink_span_log", &FitOptions::shrink_span_log, 0, 10, F::kValue, "--shrink-span-log",
     "log excess beyond the trusted one over which the learned correction shrinks to the prior alone "
     "(ln 4: a GPU 4x beyond what was validated gets the prior alone; 0: no shrinking, --no-shrink)"},
    {"meta_gpu_folds", &FitOptions::meta_gpu_folds, 0, 1, F::kSetsFalse, "--no-gpu-folds",
     "also fit the meta weights on GPU-held-out folds, which give the unseen-GPU weights and interval"},
    {"interval_level", &FitOptions::interval_level, 0.5, 0.99, F::kValue, "--interval-level",
     "nominal coverage of the split-conformal prediction interval"},
    {"xgb_rounds", &FitOptions::xgb_rounds, 1, 2000, F::kValue, "--xgb-rounds", "XGBoost boosting rounds"},
    {"xgb_max_depth", &FitOptions::xgb_max_depth, 1, 12, F::kValue, "--xgb-max-depth", "XGBoost tree depth"},
    {"xgb_eta", &FitOptions::xgb_eta, 0.001, 1, F::kValue, "--xgb-eta", "XGBoost learning rate"},
    {"trees", &FitOptions::trees, 1, 1000, F::kValue, "--trees", "extra trees: number of trees"},
    {"tree_min_leaf", &FitOptions::tree_min_leaf, 1, 100, F::kValue, "--tree-min-leaf",
     "extra trees: fewest training rows in a leaf"},
    {"tree_max_features", &FitOptions::tree_max_features, 0.01, 1, F::kValue, "--tree-max-features",
     "extra trees: share of the features tried at each split"},
    {"knn_k", &FitOptions::knn_k, 1, 50, F::kValue, "--knn-k", "k nearest neighbours: neighbours averaged"},
    {"kernel_ridge", &FitOptions::kernel_ridge, 0, 1, F::kNone, "",
     "kernel ridge in linear ridge's place, with seen/unseen-GPU meta weights (false: the format-3 stack; "
     "--linear-ridge)"},
    {"threads", &FitOptions::threads, 1, 64, F::kValue, "--threads",
     "fit workers; the model does not depend on it (unit test SameModelForAnyThreadCount)", false},
};

constexpr std::pair<std::string_view, std::string_view> kNoShrink[] = {{"shrink_span_log", "0"}};
constexpr std::pair<std::string_view, std::string_view> kLinearRidge[] = {
    {"kernel_ridge", "false"}, {"xgb_rounds", "150"}, {"xgb_eta", "0.1"}};
const FitPreset kPresets[] = {
    {"--no-shrink", "trust the learned correction on GPUs outside the training GPUs' specs", kNoShrink},
    {"--linear-ridge",
     "the stack of model format 3: linear ridge in place of kernel ridge, one set of meta weights, XGBoost 150 "
     "rounds at eta 0.1 (docs/model.md)",
     kLinearRidge},
};

std::string number_text(double v) { return fmt::format("{}", v); }

template <typename T>
bool parse_number(std::string_view text, T& out) {
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, out);
  return r.ec == std::errc() && r.ptr == end;
}

}  // namespace

std::string_view FitParameter::kind() const {
  if (is_bool()) return "bool";
  return std::holds_alternative<double FitOptions::*>(field) ? "number" : "integer";
}

std::string FitParameter::value_text(const FitOptions& o) const {
  return std::visit(
      [&](auto member) -> std::string {
        const auto v = o.*member;
        if constexpr (std::is_same_v<decltype(v), const bool>) return v ? "true" : "false";
        else if constexpr (std::is_same_v<decltype(v), const double>) return number_text(v);
        else return std::to_string(v);
      },
      field);
}

std::string FitParameter::range_text() const {
  if (is_bool()) return "true or false";
  if (std::holds_alternative<std::uint64_t FitOptions::*>(field)) return "0 to 18446744073709551615";
  return fmt::format("{} to {}", number_text(min), number_text(max));
}

std::string FitParameter::set(FitOptions& o, std::string_view text) const {
  return std::visit(
      [&](auto member) -> std::string {
        using T = std::remove_reference_t<decltype(o.*member)>;
        if constexpr (std::is_same_v<T, bool>) {
          if (text == "true" || text == "1") o.*member = true;
          else if (text == "false" || text == "0") o.*member = false;
          else return fmt::format("must be true or false, got '{}'", text);
          return {};
        } else if constexpr (std::is_same_v<T, double>) {
          double v = 0;
          if (!parse_number(text, v) || !(v >= min && v <= max))
            return fmt::format("must be a number from {}, got '{}'", range_text(), text);
          o.*member = v;
          return {};
        } else {
          T v{};
          if (!parse_number(text, v) || !(static_cast<double>(v) >= min && static_cast<double>(v) <= max))
            return fmt::format("must be a whole number from {}, got '{}'", range_text(), text);
          o.*member = v;
          return {};
        }
      },
      field);
}

std::span<const FitParameter> fit_parameters() { return kParameters; }

const FitParameter* find_fit_parameter(std::string_view name) {
  for (const auto& p : kParameters)
    if (p.name == name) return &p;
  return nullptr;
}

std::span<const FitPreset> fit_presets() { return kPresets; }

std::string fit_parameters_markdown() {
  std::string out =
      "# Fit parameters\n\n"
      "Generated by `epochcast fit --help-parameters` from the one table in `src/model/fit_options.cpp`\n"
      "(`include/epochcast/model/fit_parameters.hpp`); the test `ParametersDoc.CommittedDocIsWhatTheBuildPrints`\n"
      "fails when this file and the build differ. Regenerate: `build/epochcast fit --help-parameters > "
      "docs/parameters.md`.\n\n"
      "Every parameter is stored in the model file under `options.<name>`; `fit` and `eval` take the flag.\n"
      "Presets are applied first, then the flags one by one.\n\n"
      "| name | flag | kind | default | range | what it does |\n|---|---|---|---|---|---|\n";
  for (const auto& p : kParameters) {
    std::string flag;
    switch (p.flag_kind) {
      case F::kValue: flag = fmt::format("`{} {}`", p.flag, p.is_bool() ? "BOOL" : "N"); break;
      case F::kSetsTrue: flag = fmt::format("`{}` (sets true)", p.flag); break;
      case F::kSetsFalse: flag = fmt::format("`{}` (sets false)", p.flag); break;
      case F::kNone: flag = "(file only)"; break;
    }
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", p.name, flag, p.kind(), p.default_text(), p.range_text(),
                       p.help);
  }
  out += "\n## Presets\n\n| flag | sets | what it does |\n|---|---|---|\n";
  for (const auto& s : kPresets) {
    std::string sets;
    for (const auto& [name, value] : s.sets) sets += fmt::format("{}`{}` = {}", sets.empty() ? "" : ", ", name, value);
    out += fmt::format("| `{}` | {} | {} |\n", s.flag, sets, s.help);
  }
  out += "\n## Learners\n\nThe registry (`src/model/learner_registry.cpp`); one file per learner, "
         "`src/model/<name>_learner.cpp`.\n\n| name | what it is |\n|---|---|\n";
  for (const auto& l : learner_registry()) out += fmt::format("| `{}` | {} |\n", l.name, l.summary);
  return out;
}

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
  nlohmann::json j = nlohmann::json::object();
  for (const auto& p : kParameters) std::visit([&](auto member) { j[std::string(p.name)] = o.*member; }, p.field);
  return j;
}

FitOptions options_from_json(const nlohmann::json& j) {
  FitOptions o;
  for (const auto& p : kParameters)
    std::visit(
        [&](auto member) {
          using T = std::remove_reference_t<decltype(o.*member)>;
          const nlohmann::json& v = j.at(std::string(p.name));
          if constexpr (std::is_same_v<T, bool>) o.*member = v.get<bool>();
          else if constexpr (std::is_same_v<T, double>) o.*member = v.get<double>();
          else o.*member = json_integer<T>(v);
        },
        p.field);
  return o;
}

}  // namespace stacked

}  // namespace epochcast
