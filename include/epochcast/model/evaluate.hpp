// Honest evaluation of the stacked model: every score is on pairs whose workload (kfold),
// CNN model (lomo) or target GPU (logo) the fitted model never saw.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "epochcast/model/stacked_model.hpp"

namespace epochcast {

enum class Protocol { kKfold, kLomo, kLogo, kTest };
[[nodiscard]] const char* to_string(Protocol p);  // "kfold", "lomo", "logo", "test"
[[nodiscard]] std::optional<Protocol> protocol_from_string(std::string_view s);

struct ErrorScores {
  std::size_t pairs = 0;
  double mape_pct = 0;
  double median_ape_pct = 0;
  double p90_ape_pct = 0;
  double max_ape_pct = 0;
  std::map<std::string, double> per_target_gpu_mape_pct;
  std::map<std::string, std::size_t> per_target_gpu_pairs;
};

// One held-out pair's predictions (seconds), for comparing learners pair by pair.
struct HeldOutPrediction {
  std::string workload, model, source_gpu, target_gpu;
  double source_s = 0, truth_s = 0, stack_s = 0;
  std::vector<double> learner_s;  // in EvalReport::per_learner order
};

struct EvalReport {
  Protocol protocol = Protocol::kKfold;
  std::size_t pairs = 0;
  ErrorScores stack;
  std::vector<std::pair<std::string, ErrorScores>> per_learner;  // in learner order
  double interval_level = 0.9;
  double interval_coverage_pct = 0;     // share of held-out truths inside the interval
  double interval_median_width_pct = 0; // median (hi-lo)/prediction
  std::size_t fits = 0;                 // models fitted
  double fit_seconds = 0;               // total time spent fitting
  double fit_cpu_seconds = 0;           // process CPU time (all threads) spent fitting
  std::vector<std::string> held_out;    // the groups held out, in order
  std::vector<HeldOutPrediction> predictions;  // every scored pair, fold by fold
};

// kfold: 5 folds grouped by workload; lomo: leave one CNN model out; logo: leave one target
// GPU out, that GPU on neither side of any training pair.
[[nodiscard]] EvalReport evaluate(const Dataset& dataset, const GpuCatalog& catalog, Protocol protocol,
                                  const FitOptions& options = {}, ProgressFn progress = {});
// Fits on `train`, scores every pair formed within `test`.
[[nodiscard]] EvalReport evaluate_on_test(const Dataset& train, const Dataset& test,
                                          const GpuCatalog& catalog, const FitOptions& options = {},
                                          ProgressFn progress = {});
// Scores a fitted model on the given pairs of a dataset.
void score_pairs(const StackedModel& model, const Dataset& dataset, const std::vector<RunPair>& pairs,
                 const GpuCatalog& catalog, std::vector<double>& stack_pred_s,
                 std::vector<std::vector<double>>& learner_pred_s, std::vector<double>& lo_s,
                 std::vector<double>& hi_s);

[[nodiscard]] ErrorScores score(const std::vector<double>& predicted_s, const std::vector<double>& truth_s,
                                const std::vector<std::string>& target_gpu);

}  // namespace epochcast
