#include "epochcast/model/public_eval.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <tuple>

#include "epochcast/model/scaling_prior.hpp"

namespace epochcast {
namespace {

constexpr double kIntervalLevel = 0.9;  // the model's intervals are 90 %

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Split-conformal rank: the ceil(q (n + 1))-th smallest, capped at the largest.
  const auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size() + 1)));
  return v[std::min(v.size(), std::max<std::size_t>(k, 1)) - 1];
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

const char* family_name(PrecisionClass c) { return c == PrecisionClass::kMixed ? "fp16" : "tf32"; }

// Bisection steps for the job-agnostic floor: 60 halvings of [0, 1000] % reach 1e-15 %, far below print.
constexpr int kFloorBisections = 60;
// Upper end of the bisection: from r = 100 % on the window is unbounded, so this brackets it.
constexpr double kFloorMaxPct = 1000.0;

// Most truths of one pair (sorted log ratios) inside a window of log width w: what the best
// constant for that pair gets within the error whose window is w.
std::size_t most_within(const std::vector<double>& sorted, double w) {
  std::size_t best = 0;
  for (std::size_t i = 0, j = 0; i < sorted.size(); ++i) {
    while (j < sorted.size() && sorted[j] - sorted[i] <= w) ++j;
    best = std::max(best, j - i);
  }
  return best;
}

// The least r (in %) such that one constant per pair puts half of all ratios within r: a ratio
// is within r when its log error lies in [log(1 - r), log(1 + r)], a window of log width
// log((1 + r) / (1 - r)).
double job_agnostic_floor(std::vector<std::vector<double>> pairs) {
  std::size_t n = 0;
  for (auto& p : pairs) std::sort(p.begin(), p.end()), n += p.size();
  if (n == 0) return 0;
  const std::size_t need = (n + 1) / 2;
  auto enough = [&](double r_pct) {
    const double r = r_pct / 100.0;
    const double w = r >= 1 ? 1e300 : std::log((1 + r) / (1 - r));
    std::size_t got = 0;
    for (const auto& p : pairs) got += most_within(p, w);
    return got >= need;
  };
  double lo = 0, hi = kFloorMaxPct;
  for (int it = 0; it < kFloorBisections; ++it) {
    const double mid = 0.5 * (lo + hi);
    (enough(mid) ? hi : lo) = mid;
  }
  return hi;
}

// Iterations of the reweighted fit of the GPU levels (L1 by IRLS; converged well before).
constexpr int kLevelIterations = 200;
// Floor of |residual| in the IRLS weights (log units): keeps the weights finite.
constexpr double kLevelIrlsFloor = 1e-4;

// log time = workload offset + GPU level, fitted by least absolute residual (IRLS), per precision
// family; returns every ordered pair's |error| in % of the levels' ratio against the truth.
std::vector<double> gpu_level_oracle_errors(const std::map<std::tuple<std::string, Precision, std::string>, double>& means,
                                            PrecisionClass cls) {
  struct Cell { std::string gpu; Precision precision; std::string workload; double t; };
  std::vector<Cell> cells;
  for (const auto& [key, thr] : means)
    if (precision_class(std::get<1>(key)) == cls) cells.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), -std::log(thr)});
  std::map<std::string, double> level;                       // by GPU
  std::map<std::pair<Precision, std::string>, double> offset;  // by (precision, workload)
  for (const auto& c : cells) level[c.gpu] = 0, offset[{c.precision, c.workload}] = 0;
  std::vector<double> w(cells.size(), 1.0);
  for (int it = 0; it < kLevelIterations; ++it) {
    // Weighted means alternate between the two effects, then the weights follow the residuals.
    for (int pass = 0; pass < 2; ++pass) {
      std::map<std::string, std::pair<double, double>> lsum;
      std::map<std::pair<Precision, std::string>, std::pair<double, double>> osum;
      for (std::size_t i = 0; i < cells.size(); ++i) {
        const auto& c = cells[i];
        if (pass == 0) {
          auto& [s, n] = osum[{c.precision, c.workload}];
          s += w[i] * (c.t - level[c.gpu]), n += w[i];
        } else {
          auto& [s, n] = lsum[c.gpu];
          s += w[i] * (c.t - offset[{c.precision, c.workload}]), n += w[i];
        }
      }
      for (const auto& [k, v] : osum) offset[k] = v.first / v.second;
      for (const auto& [k, v] : lsum) level[k] = v.first / v.second;
    }
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const auto& c = cells[i];
      w[i] = 1.0 / std::max(kLevelIrlsFloor, std::abs(c.t - offset[{c.precision, c.workload}] - level[c.gpu]));
    }
  }
  std::vector<double> errs;
  for (const auto& a : cells)
    for (const auto& b : cells)
      if (a.gpu != b.gpu && a.precision == b.precision && a.workload == b.workload) {
        const double truth = a.t - b.t, pred = level[a.gpu] - level[b.gpu];
        errs.push_back(100.0 * std::abs(std::exp(pred - truth) - 1.0));
      }
  return errs;
}

}  // namespace

double PublicEvalReport::interval_q_log(PrecisionClass c) const {
  const auto it = calibrated_log_errors.find(family_name(c));
  if (it == calibrated_log_errors.end()) return 0;
  std::vector<double> a;
  for (double e : it->second) a.push_back(std::abs(e));
  return quantile(a, kIntervalLevel);
}

PublicEvalReport evaluate_public(const PublicTable& table, const GpuCatalog& catalog, bool workloads_too) {
  PublicEvalReport rep;
  rep.table = table.source;
  const auto means = table.mean_throughput();
  const GpuSpec* reference = catalog.find("a100-80gb");
  // Spec ratios as published: every ratio fully realised, half the busy time memory-bound.
  const ScalingParams spec_sheet{.compute_exp = 1.0, .bandwidth_exp = 1.0, .power_exp = 0.0, .memory_share = 0.5, .fixed_share = 0.0, .interval_q_log = 0.0};
  // Per (gpu, family): log errors of the calibrated prior, for the nested interval check.
  std::map<std::pair<std::string, std::string>, std::vector<double>> held_errors;
  std::map<std::string, std::map<std::string, std::vector<double>>> all_errors;  // family -> prior -> %
  std::map<std::string, std::vector<std::vector<double>>> family_pair_truths;     // family -> per pair
  for (const std::string& held : table.gpu_ids()) {
    const ScalingFit a = fit_scaling_prior(table, catalog, held, true);
    const ScalingFit b = fit_scaling_prior(table, catalog, held, false);
    const GpuSpec& h = *catalog.find(held);
    for (PrecisionClass cls : {PrecisionClass::kMixed, PrecisionClass::kFp32Code}) {
      PublicEvalCell cell{held, family_name(cls), 0, {}, {}, 0};
      std::map<std::string, std::vector<double>> errs;
      // Each other GPU's true log ratios to the held-out one, per precision, for the pair oracle.
      std::map<std::pair<std::string, Precision>, std::vector<double>> pair_truths;
      for (const auto& [key, thr_h] : means) {
        const auto& [gpu, precision, workload] = key;
        if (gpu != held || precision_class(precision) != cls) continue;
        for (const auto& [key2, thr_o] : means)
          if (std::get<0>(key2) != held && std::get<1>(key2) == precision && std::get<2>(key2) == workload)
            pair_truths[{std::get<0>(key2), precision}].push_back(std::log(thr_o / thr_h));
      }
      std::map<std::pair<std::string, Precision>, double> pair_constant;
      for (const auto& [k, v] : pair_truths) {
        pair_constant[k] = median(v);
        family_pair_truths[family_name(cls)].push_back(v);
      }
      for (const auto& [key, thr_h] : means) {
        const auto& [gpu, precision, workload] = key;
        if (gpu != held || precision_class(precision) != cls) continue;
        for (const auto& [key2, thr_o] : means) {
          const auto& [other, precision2, workload2] = key2;
          if (other == held || precision2 != precision || workload2 != workload) continue;
          const GpuSpec& o = *catalog.find(other);
          const double truth = std::log(thr_o / thr_h);  // time on held / time on other
          // Named captures: clang before 16 cannot capture structured bindings (tests/fuzz builds with 14).
          auto level = [&, &wl = workload, &prec = precision](const ScalingFit& f, const GpuSpec& g) {
            return busy_level_log(f.workload_params.at({cls, wl}), 1.0, *reference, g, prec);
          };
          const double pa = level(a, h) - level(a, o), pb = level(b, h) - level(b, o);
          const double ps = scaling_log_ratio(spec_sheet, 1.0, o, o, h, precision);  // shares on the source
          const double pf = std::log(0.5 * o.memory_bandwidth_gbs / h.memory_bandwidth_gbs +
                                     0.5 * o.fp32_tflops / h.fp32_tflops);
          const double po = pair_constant.at({other, precision});
          const double preds[] = {pb, pa, ps, pf, po};
          for (std::size_t k = 0; k < std::size(preds); ++k) {
            const double e = 100.0 * std::abs(std::exp(preds[k] - truth) - 1.0);
            errs[kPublicEvalPriors.at(k)].push_back(e);
            all_errors[family_name(cls)][kPublicEvalPriors.at(k)].push_back(e);
          }
          held_errors[{held, cell.family}].push_back(pb - truth);
          rep.calibrated_log_errors[cell.family].push_back(pb - truth);
          ++cell.ratios;
        }
      }
      if (cell.ratios == 0) continue;
      for (const auto& [name, e] : errs) cell.median_pct[name] = median(e), cell.mean_pct[name] = mean(e);
      rep.cells.push_back(std::move(cell));
    }
  }
  // Interval: q from every other held-out GPU's errors of the same family (nested: the held-out
  // GPU's own errors never set its width), coverage on the held-out GPU's ratios.
  std::map<std::string, std::pair<std::size_t, std::size_t>> covered;  // family -> (inside, all)
  for (auto& cell : rep.cells) {
    std::vector<double> others;
    for (const auto& [k, e] : held_errors)
      if (k.second == cell.family && k.first != cell.gpu)
        for (double v : e) others.push_back(std::abs(v));
    const double q = quantile(others, kIntervalLevel);
    std::size_t inside = 0;
    const auto& mine = held_errors[{cell.gpu, cell.family}];
    for (double v : mine) inside += std::abs(v) <= q;
    cell.coverage_pct = 100.0 * static_cast<double>(inside) / static_cast<double>(mine.size());
    covered[cell.family].first += inside;
    covered[cell.family].second += mine.size();
  }
  for (const auto& [family, c] : covered)
    rep.overall_coverage_pct[family] = 100.0 * static_cast<double>(c.first) / static_cast<double>(c.second);
  for (const auto& [family, pairs] : family_pair_truths) rep.job_agnostic_floor_pct[family] = job_agnostic_floor(pairs);
  for (PrecisionClass cls : {PrecisionClass::kMixed, PrecisionClass::kFp32Code})
    rep.gpu_level_oracle_pct[family_name(cls)] = median(gpu_level_oracle_errors(means, cls));
  for (const auto& [family, by_prior] : all_errors)
    for (const auto& [prior, e] : by_prior) rep.overall_median_pct[family][prior] = median(e);
  // Leave one workload out: the family's shares and exponents from the other workloads.
  std::set<std::string> workloads;
  if (workloads_too)
    for (const auto& [key, thr] : means) workloads.insert(std::get<2>(key));
  std::map<std::string, std::vector<double>> lowo_errors;  // family -> %
  for (const std::string& held : workloads) {
    const ScalingFit f = fit_scaling_prior(table, catalog, {}, false, held);
    for (PrecisionClass cls : {PrecisionClass::kMixed, PrecisionClass::kFp32Code}) {
      const ScalingParams& p = f.prior.params(cls);
      PublicWorkloadCell cell{held, family_name(cls), 0, 0, 0};
      std::vector<double> errs;
      for (const auto& [key, thr_a] : means) {
        const auto& [ga, precision, workload] = key;
        if (workload != held || precision_class(precision) != cls) continue;
        for (const auto& [key2, thr_b] : means) {
          const auto& [gb, precision2, workload2] = key2;
          if (workload2 != held || precision2 != precision || !(ga < gb)) continue;
          const double truth = std::log(thr_b / thr_a);  // time on a / time on b
          const double pred = busy_level_log(p, 1.0, *reference, *catalog.find(ga), precision) -
                              busy_level_log(p, 1.0, *reference, *catalog.find(gb), precision);
          errs.push_back(100.0 * std::abs(std::exp(pred - truth) - 1.0));
        }
      }
      if (errs.empty()) continue;
      cell.ratios = errs.size();
      cell.median_pct = median(errs);
      cell.mean_pct = mean(errs);
      lowo_errors[cell.family].insert(lowo_errors[cell.family].end(), errs.begin(), errs.end());
      rep.workload_cells.push_back(std::move(cell));
    }
  }
  for (const auto& [family, e] : lowo_errors) rep.lowo_median_pct[family] = median(e);
  return rep;
}

}  // namespace epochcast
