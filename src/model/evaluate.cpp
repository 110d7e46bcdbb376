#include "epochcast/model/evaluate.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "epochcast/core/error.hpp"
#include "group_folds.hpp"
#include "pair_features.hpp"

namespace epochcast {
namespace {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

const char* to_string(Protocol p) {
  switch (p) {
    case Protocol::kKfold: return "kfold";
    case Protocol::kLomo: return "lomo";
    case Protocol::kLogo: return "logo";
    case Protocol::kTest: return "test";
  }
  return "?";
}

std::optional<Protocol> protocol_from_string(std::string_view s) {
  if (s == "kfold") return Protocol::kKfold;
  if (s == "lomo") return Protocol::kLomo;
  if (s == "logo") return Protocol::kLogo;
  if (s == "test") return Protocol::kTest;
  return std::nullopt;
}

ErrorScores score(const std::vector<double>& pred, const std::vector<double>& truth,
                  const std::vector<std::string>& target) {
  ErrorScores s;
  s.pairs = pred.size();
  std::vector<double> ape(pred.size());
  std::map<std::string, std::vector<double>> by_gpu;
  for (std::size_t i = 0; i < pred.size(); ++i) {
    ape[i] = std::abs(pred[i] - truth[i]) / truth[i] * 100.0;
    by_gpu[target[i]].push_back(ape[i]);
  }
  if (ape.empty()) return s;
  double sum = 0;
  for (double a : ape) sum += a;
  s.mape_pct = sum / static_cast<double>(ape.size());
  s.median_ape_pct = percentile(ape, 0.5);
  s.p90_ape_pct = percentile(ape, 0.9);
  s.max_ape_pct = *std::max_element(ape.begin(), ape.end());
  for (const auto& [g, v] : by_gpu) {
    double t = 0;
    for (double a : v) t += a;
    s.per_target_gpu_mape_pct[g] = t / static_cast<double>(v.size());
    s.per_target_gpu_pairs[g] = v.size();
  }
  return s;
}

void score_pairs(const StackedModel& model, const Dataset& ds, const std::vector<RunPair>& pairs,
                 const GpuCatalog& catalog, std::vector<double>& stack, std::vector<std::vector<double>>& learners,
                 std::vector<double>& lo, std::vector<double>& hi) {
  const std::size_t nl = model.learner_names().size();
  stack.clear();
  lo.clear();
  hi.clear();
  learners.assign(nl, {});
  for (const auto& pr : pairs) {
    const DatasetRow& s = ds.rows.at(pr.source);
    const DatasetRow& t = ds.rows.at(pr.target);
    const GpuSpec* sg = catalog.find(s.gpu_id);
    const GpuSpec* tg = catalog.find(t.gpu_id);
    if (!sg || !tg) throw Error(ErrorCode::kNotFound, "GPU not in the catalog: " + (sg ? t.gpu_id : s.gpu_id));
    const Prediction p = model.predict(s.features, s.epoch_s, *sg, *tg);
    stack.push_back(p.epoch_s);
    lo.push_back(p.lo_s);
    hi.push_back(p.hi_s);
    for (std::size_t l = 0; l < nl; ++l) learners[l].push_back(p.per_learner[l].epoch_s);
  }
}

namespace {

struct Split {
  std::string name;
  std::vector<RunPair> train, test;
};

EvalReport run_splits(const Dataset& train_ds, const Dataset& test_ds, const std::vector<Split>& splits,
                      const GpuCatalog& catalog, Protocol protocol, const FitOptions& options,
                      const ProgressFn& progress) {
  EvalReport r;
  r.protocol = protocol;
  r.interval_level = options.interval_level;
  std::vector<double> all_stack, all_truth, all_lo, all_hi;
  std::vector<std::string> all_target;
  std::vector<std::vector<double>> all_learners;
  std::vector<std::string> learner_names;
  for (std::size_t k = 0; k < splits.size(); ++k) {
    const Split& sp = splits[k];
    r.held_out.push_back(sp.name);
    if (sp.test.empty()) continue;
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t cpu0 = std::clock();
    ProgressFn inner;
    if (progress)
      inner = [&](std::string_view what, std::size_t done, std::size_t total) {
        progress("fold " + std::to_string(k + 1) + "/" + std::to_string(splits.size()) + " (" + sp.name +
                     "): " + std::string(what),
                 k * total + done, splits.size() * total);
      };
    const StackedModel model = fit_model_on_pairs(train_ds, sp.train, catalog, options, inner);
    r.fit_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.fit_cpu_seconds += static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
    ++r.fits;
    learner_names = model.learner_names();
    std::vector<double> st, lo, hi;
    std::vector<std::vector<double>> ls;
    score_pairs(model, test_ds, sp.test, catalog, st, ls, lo, hi);
    if (all_learners.empty()) all_learners.assign(ls.size(), {});
    for (std::size_t i = 0; i < sp.test.size(); ++i) {
      const DatasetRow& t = test_ds.rows[sp.test[i].target];
      const DatasetRow& s = test_ds.rows[sp.test[i].source];
      HeldOutPrediction hp{s.workload, s.model, s.gpu_id, t.gpu_id, s.epoch_s, t.epoch_s, st[i], {}};
      for (const auto& l : ls) hp.learner_s.push_back(l[i]);
      r.predictions.push_back(std::move(hp));
      all_stack.push_back(st[i]);
      all_lo.push_back(lo[i]);
      all_hi.push_back(hi[i]);
      all_truth.push_back(t.epoch_s);
      all_target.push_back(t.gpu_id);
      for (std::size_t l = 0; l < ls.size(); ++l) all_learners[l].push_back(ls[l][i]);
    }
  }
  if (all_stack.empty())
    throw Error(ErrorCode::kInvalidArgument, std::string("protocol '") + to_string(protocol) +
                                                 "' left no pair to score");
  r.pairs = all_stack.size();
  r.stack = score(all_stack, all_truth, all_target);
  for (std::size_t l = 0; l < all_learners.size(); ++l)
    r.per_learner.emplace_back(learner_names[l], score(all_learners[l], all_truth, all_target));
  std::size_t inside = 0;
  std::vector<double> widths;
  for (std::size_t i = 0; i < all_truth.size(); ++i) {
    if (all_truth[i] >= all_lo[i] && all_truth[i] <= all_hi[i]) ++inside;
    widths.push_back((all_hi[i] - all_lo[i]) / all_stack[i] * 100.0);
  }
  r.interval_coverage_pct = 100.0 * static_cast<double>(inside) / static_cast<double>(all_truth.size());
  r.interval_median_width_pct = percentile(widths, 0.5);
  return r;
}

}  // namespace

EvalReport evaluate(const Dataset& ds, const GpuCatalog& catalog, Protocol protocol, const FitOptions& options,
                    ProgressFn progress) {
  const std::vector<RunPair> pairs = make_pairs(ds);
  if (pairs.empty())
    throw Error(ErrorCode::kInvalidArgument,
                "no pairs in '" + ds.source + "': no workload was run on two GPU types");
  std::vector<Split> splits;
  if (protocol == Protocol::kLomo) {
    for (const std::string& m : ds.models()) {
      Split s{m, {}, {}};
      for (const auto& p : pairs) (ds.rows[p.source].model == m ? s.test : s.train).push_back(p);
      splits.push_back(std::move(s));
    }
    if (splits.size() < 2) throw Error(ErrorCode::kInvalidArgument, "lomo needs at least two CNN models");
  } else if (protocol == Protocol::kLogo) {
    for (const std::string& g : ds.gpu_ids()) {
      Split s{g, {}, {}};
      for (const auto& p : pairs) {
        const bool src = ds.rows[p.source].gpu_id == g, tgt = ds.rows[p.target].gpu_id == g;
        if (tgt) s.test.push_back(p);
        else if (!src) s.train.push_back(p);
      }
      if (s.train.empty())
        throw Error(ErrorCode::kInvalidArgument, "logo needs at least three GPU types (holding out " + g +
                                                     " leaves no training pair)");
      splits.push_back(std::move(s));
    }
  } else if (protocol == Protocol::kKfold) {
    std::vector<std::string> workloads;
    for (const auto& r : ds.rows) workloads.push_back(r.workload);
    const GroupFolds by_workload = group_folds(workloads, 5, options.seed);
    const std::size_t k = by_workload.folds;
    if (k < 2) throw Error(ErrorCode::kInvalidArgument, "kfold needs at least two workloads");
    const std::map<std::string, std::size_t>& fold = by_workload.fold_of_label;
    for (std::size_t f = 0; f < k; ++f) {
      Split s{"fold " + std::to_string(f + 1), {}, {}};
      for (const auto& p : pairs) (fold.at(ds.rows[p.source].workload) == f ? s.test : s.train).push_back(p);
      splits.push_back(std::move(s));
    }
  } else {
    throw Error(ErrorCode::kInvalidArgument, "use evaluate_on_test for the test protocol");
  }
  return run_splits(ds, ds, splits, catalog, protocol, options, progress);
}

EvalReport evaluate_on_test(const Dataset& train, const Dataset& test, const GpuCatalog& catalog,
                            const FitOptions& options, ProgressFn progress) {
  Split s{"test", make_pairs(train), make_pairs(test)};
  if (s.test.empty())
    throw Error(ErrorCode::kInvalidArgument,
                "no pairs in test file '" + test.source + "': no workload was run on two GPU types");
  // Train and test rows live in different datasets: run_splits takes both.
  return run_splits(train, test, {s}, catalog, Protocol::kTest, options, progress);
}

}  // namespace epochcast
