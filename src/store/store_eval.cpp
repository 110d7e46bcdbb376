#include "epochcast/store/store_eval.hpp"

#include <cmath>
#include <map>
#include <set>

#include "epochcast/core/error.hpp"
#include "epochcast/store/pairs.hpp"

namespace epochcast {

StoreEvaluation evaluate_store(const std::vector<RunRecord>& runs, const StackedModel& model,
                               const GpuCatalog& catalog, const CalibrationOptions& options) {
  const EpochPredictor predict = [&](const RunRecord& s, const std::string& t) {
    const GpuSpec* sg = catalog.find(s.gpu);
    const GpuSpec* tg = catalog.find(t);
    return sg && tg ? model.predict(s.features, s.epoch_s, *sg, *tg).epoch_s : 0.0;
  };
  const PairSet set = measured_pairs(runs, predict);
  StoreEvaluation out;
  for (const auto& r : set.refused) out.refused.push_back(r.reason);
  // The model's prediction and residual of every usable pair, once.
  struct Scored {
    const MeasuredPair* pair;
    double predicted_s;
  };
  std::vector<Scored> scored;
  std::vector<PairResidual> residuals;
  std::map<std::int64_t, const RunRecord*> by_id;
  for (const auto& r : runs) by_id[r.id] = &r;
  for (const auto& p : set.pairs) {
    const double pred = predict(*by_id.at(p.source_run), p.target_gpu);
    if (!(pred > 0)) continue;  // a GPU the catalog lacks
    scored.push_back({&p, pred});
    residuals.push_back({p.source_gpu, p.target_gpu, std::log(p.target_epoch_s / pred)});
  }
  if (scored.empty())
    throw Error(ErrorCode::kInvalidArgument,
                "the store holds no measured pair to score: no job key was run on two GPU types of the catalog");
  std::set<std::string> jobs;
  for (const auto& s : scored) jobs.insert(s.pair->job_key);
  struct Sum {
    std::size_t n = 0;
    double model = 0, calibrated = 0;
  };
  std::map<std::pair<std::string, std::string>, Sum> sums;
  Sum all;
  for (const std::string& job : jobs) {
    std::vector<PairResidual> others;
    for (std::size_t i = 0; i < scored.size(); ++i)
      if (scored[i].pair->job_key != job) others.push_back(residuals[i]);
    const Calibration cal = fit_calibration(others, options);
    for (const auto& s : scored) {
      if (s.pair->job_key != job) continue;
      const double truth = s.pair->target_epoch_s;
      const double calibrated = s.predicted_s * std::exp(cal.log_bias(s.pair->source_gpu, s.pair->target_gpu));
      for (Sum* sum : {&sums[{s.pair->source_gpu, s.pair->target_gpu}], &all}) {
        ++sum->n;
        sum->model += std::abs(s.predicted_s - truth) / truth * 100;
        sum->calibrated += std::abs(calibrated - truth) / truth * 100;
      }
    }
  }
  out.jobs = jobs.size();
  out.pairs = all.n;
  out.model_mape_pct = all.model / static_cast<double>(all.n);
  out.calibrated_mape_pct = all.calibrated / static_cast<double>(all.n);
  for (const auto& [k, s] : sums)
    out.per_gpu_pair.push_back({k.first, k.second, s.n, s.model / static_cast<double>(s.n),
                                s.calibrated / static_cast<double>(s.n)});
  return out;
}

}  // namespace epochcast
