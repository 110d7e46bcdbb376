#include "epochcast/store/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace epochcast {

Calibration::Calibration(std::vector<PairCalibration> pairs, double residual_sd)
    : pairs_(std::move(pairs)), residual_sd_(residual_sd) {}

const PairCalibration* Calibration::find(const std::string& s, const std::string& t) const {
  for (const auto& p : pairs_)
    if (p.source_gpu == s && p.target_gpu == t) return &p;
  return nullptr;
}

double Calibration::log_bias(const std::string& s, const std::string& t) const {
  const PairCalibration* p = find(s, t);
  return p ? p->log_bias : 0.0;
}

Calibration fit_calibration(const std::vector<PairResidual>& residuals, const CalibrationOptions& o) {
  std::map<std::pair<std::string, std::string>, std::vector<double>> by_pair;
  for (const auto& r : residuals)
    if (std::isfinite(r.log_residual)) by_pair[{r.source_gpu, r.target_gpu}].push_back(r.log_residual);
  // Pooled within-pair variance, started from the prior.
  double ss = o.prior_residual_weight * o.prior_residual_sd * o.prior_residual_sd;
  double dof = o.prior_residual_weight;
  std::map<std::pair<std::string, std::string>, double> means;
  for (const auto& [key, v] : by_pair) {
    double m = 0;
    for (double x : v) m += x;
    m /= static_cast<double>(v.size());
    if (o.median) {
      std::vector<double> sorted = v;
      std::sort(sorted.begin(), sorted.end());
      const std::size_t k = sorted.size();
      m = k % 2 ? sorted[k / 2] : (sorted[k / 2 - 1] + sorted[k / 2]) / 2;
    }
    means[key] = m;
    for (double x : v) ss += (x - m) * (x - m);
    dof += static_cast<double>(v.size()) - 1;
  }
  const double var = ss / dof;
  std::vector<PairCalibration> out;
  for (const auto& [key, v] : by_pair) {
    PairCalibration c;
    c.source_gpu = key.first;
    c.target_gpu = key.second;
    c.pairs = v.size();
    c.mean_log_residual = means[key];
    const double n = static_cast<double>(v.size());
    const double m2 = c.mean_log_residual * c.mean_log_residual;
    c.shrink = m2 > 0 && v.size() >= o.min_pairs ? std::max(0.0, 1.0 - o.threshold * var / (n * m2)) : 0.0;
    c.log_bias = c.shrink * c.mean_log_residual;
    out.push_back(std::move(c));
  }
  return Calibration(std::move(out), std::sqrt(var));
}

std::vector<PairResidual> pair_residuals(const PairSet& set, const std::vector<RunRecord>& runs,
                                         const StackedModel& model, const GpuCatalog& catalog) {
  std::map<std::int64_t, const RunRecord*> by_id;
  for (const auto& r : runs) by_id[r.id] = &r;
  std::vector<PairResidual> out;
  for (const auto& p : set.pairs) {
    auto s = by_id.find(p.source_run);
    const GpuSpec* sg = catalog.find(p.source_gpu);
    const GpuSpec* tg = catalog.find(p.target_gpu);
    if (s == by_id.end() || !sg || !tg) continue;
    const double predicted = model.predict(s->second->features, p.source_epoch_s, *sg, *tg).epoch_s;
    out.push_back({p.source_gpu, p.target_gpu, std::log(p.target_epoch_s / predicted)});
  }
  return out;
}

}  // namespace epochcast
