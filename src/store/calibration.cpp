#include "epochcast/store/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
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

namespace {

struct Estimator {
  const char* name;
  bool none, median;
  double threshold;
};
// choose_by_lojo's candidates, in order of preference on a tie.
constexpr Estimator kLojoCandidates[] = {
    {"none", true, false, 0}, {"median t=3", false, true, 3}, {"median t=1", false, true, 1},
    {"mean t=3", false, false, 3}, {"mean t=1", false, false, 1}};

double location(std::vector<double> v, bool median) {
  if (v.empty()) return 0;
  if (!median) {
    double m = 0;
    for (double x : v) m += x;
    return m / static_cast<double>(v.size());
  }
  std::sort(v.begin(), v.end());
  const std::size_t k = v.size();
  return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

// The shrunk bias of one GPU pair's residuals under an estimator (0 below min_pairs).
double shrunk_bias(const std::vector<double>& v, const Estimator& e, double var, std::size_t min_pairs) {
  if (e.none || v.size() < min_pairs) return 0;
  const double m = location(v, e.median);
  const double n = static_cast<double>(v.size());
  return std::isfinite(m) && m != 0 ? m * std::max(0.0, 1.0 - e.threshold * var / (n * m * m)) : 0.0;
}

// The candidate of least leave-one-out error on v (each residual predicted from the others).
const Estimator& lojo_choice(const std::vector<double>& v, double var, std::size_t min_pairs) {
  const Estimator* best = &kLojoCandidates[0];
  double best_err = std::numeric_limits<double>::infinity();
  for (const Estimator& e : kLojoCandidates) {
    double err = 0;
    std::vector<double> others;
    for (std::size_t i = 0; i < v.size(); ++i) {
      others.clear();
      for (std::size_t j = 0; j < v.size(); ++j)
        if (j != i) others.push_back(v[j]);
      err += std::abs(std::exp(v[i] - shrunk_bias(others, e, var, min_pairs)) - 1);
    }
    if (err < best_err - 1e-12) best_err = err, best = &e;
  }
  return *best;
}

}  // namespace

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
    c.estimator = fmt::format("{} t={}", o.median ? "median" : "mean", o.threshold);
    // A choice needs pairs to leave out: below min_pairs + 1 the fallback above stands.
    if (o.choose_by_lojo && v.size() > o.min_pairs) {
      const Estimator& e = lojo_choice(v, var, o.min_pairs);
      c.estimator = e.name;
      c.mean_log_residual = e.none ? c.mean_log_residual : location(v, e.median);
      c.log_bias = shrunk_bias(v, e, var, o.min_pairs);
      c.shrink = c.mean_log_residual != 0 ? c.log_bias / c.mean_log_residual : 0;
    }
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
