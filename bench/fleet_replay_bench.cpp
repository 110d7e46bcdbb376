// Replays the bundled dataset as a fleet's history (docs/store.md, "The gain"): its four GPU
// types are the fleet, each workload a job that runs on some of them. The workloads are split
// in two halves by a seeded shuffle; the "bundled model" is fitted on one half's pairs and the
// other half's workloads arrive as new jobs, then the halves swap. For a GPU pair the bundled
// model "never saw", both directions of that pair are also held out of its fit.
//
// Per ordered GPU pair, jobs arrive one by one in a random order (kOrders orders); after n
// measured pairs the store calibration (shrinkage, store/calibration.hpp) is fitted on them and
// the MAPE is scored on the jobs that have not arrived (the jobs past the first kMaxPairs, the
// same set for every n). At n = kMaxPairs a refit with the pairs in the training data
// (fit --store, weight kStorePairWeight) is scored too, in the first kRefitOrders orders
// (FLEET_REFIT_ORDERS=N: the first N), alone and with
// the calibration fitted on its out-of-fold residuals of the 20 pairs ("+calib"). The
// "fit --store" column is what the product does at n = 20: a GPU pair the bundled fit holds
// kHeldGpuPairMinPairs pairs of (every "seen" pair) calibrates only, any other is refitted.
//
// Writes a table to stdout, fleet_replay.json and fleet_replay.svg to the folder given
// (default: the current one). Not a Google Benchmark: a replay with one result.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>

#include "epochcast/model/dataset.hpp"
#include "epochcast/model/stacked_model.hpp"
#include "epochcast/store/calibration.hpp"
#include "epochcast/store/pairs.hpp"

using namespace epochcast;

namespace {

constexpr int kOrders = 20;                  // random arrival orders per GPU pair
constexpr std::size_t kMaxPairs = 20;        // the issue's target point
// Orders with a refit at kMaxPairs: with 1 the seen-pair worst was 1.121 (p100->a10g), with 4
// 1.018 for that pair (docs/journal/store.md, session c): one order's 44-61 jobs are noisy.
constexpr int kRefitOrders = 4;
// As fit --store (kStorePairWeight in src/service/store_link.hpp); FLEET_WEIGHT=N to measure another.
const int kStorePairWeight = std::getenv("FLEET_WEIGHT") ? std::atoi(std::getenv("FLEET_WEIGHT")) : 3;
const std::vector<std::size_t> kSteps = {0, 1, 2, 3, 5, 10, 15, 20};

// Estimator variants scored side by side; the first is the default (CalibrationOptions{}).
struct Variant {
  std::string name;
  CalibrationOptions options;
};
std::vector<Variant> variants() {
  std::vector<Variant> v{{"default", {}}};
  for (double t : {1.0, 3.0, 5.0})
    for (bool med : {false, true}) {
      CalibrationOptions o;
      o.min_pairs = 1;  // as measured first
      o.threshold = t;
      o.median = med;
      v.push_back({fmt::format("t={} {}", t, med ? "median" : "mean"), o});
    }
  CalibrationOptions lojo;  // per GPU pair, the estimator of least leave-one-job-out error
  lojo.choose_by_lojo = true;
  v.push_back({"lojo choice", lojo});
  return v;
}

struct Job {
  std::size_t src_row, tgt_row;  // the job's runs on the source and target GPU
};

double mape(const std::vector<double>& pred, const std::vector<double>& truth) {
  double s = 0;
  for (std::size_t i = 0; i < pred.size(); ++i) s += std::abs(pred[i] - truth[i]) / truth[i];
  return pred.empty() ? NAN : 100 * s / static_cast<double>(pred.size());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string out_dir = argc > 1 ? argv[1] : ".";
  const auto t0 = std::chrono::steady_clock::now();
  const GpuCatalog catalog = load_gpu_catalog(EPOCHCAST_SOURCE_DIR "/data/gpus.csv");
  const Dataset ds = load_dataset(EPOCHCAST_SOURCE_DIR "/data/nvidiasmi_devicequery_all.csv", catalog);
  const std::vector<RunPair> all_pairs = make_pairs(ds);
  const std::vector<std::string> gpus = ds.gpu_ids();

  std::vector<std::string> workloads;
  for (const auto& r : ds.rows) workloads.push_back(r.workload);
  std::sort(workloads.begin(), workloads.end());
  workloads.erase(std::unique(workloads.begin(), workloads.end()), workloads.end());
  std::mt19937_64 rng(42);
  std::shuffle(workloads.begin(), workloads.end(), rng);
  std::map<std::string, int> half;
  for (std::size_t i = 0; i < workloads.size(); ++i) half[workloads[i]] = static_cast<int>(i % 2);

  // results[kind][src->tgt][step] = MAPE summed over orders and halves (kind: seen/unseen)
  struct Acc {
    std::map<std::size_t, std::vector<double>> bundled, calibrated;  // per step: one MAPE per (half, order)
    std::map<std::string, std::vector<double>> variant_at_max;        // variant -> MAPE at kMaxPairs
    std::vector<double> refit, refit_bundled, refit_calibrated;
    std::size_t eval_jobs = 0;
    std::vector<double> history_jobs;  // per half: jobs of this GPU pair in the bundled fit's half
    bool held = false;                 // the bundled fit holds this GPU pair (store/pairs.hpp)
  };
  std::map<std::string, std::map<std::string, Acc>> results;
  FitOptions fopt;
  std::size_t fits = 0;
  const bool refits = std::getenv("FLEET_NO_REFIT") == nullptr;
  // Orders with a refit (the first N of the kOrders; FLEET_REFIT_ORDERS=N, default
  // kRefitOrders): each adds 24 fits. The refit columns are means over them and both halves.
  const int refit_orders = std::getenv("FLEET_REFIT_ORDERS")
                               ? std::clamp(std::atoi(std::getenv("FLEET_REFIT_ORDERS")), 1, kOrders)
                               : kRefitOrders;
  const std::vector<Variant> vars = variants();
  std::map<std::string, double> worst_both_ways;
  std::map<std::string, std::size_t> refused_same_job, checked_same_job;
  // The curve's estimator: the default, or FLEET_THRESHOLD / FLEET_MIN_PAIRS to measure others.
  CalibrationOptions main_options;
  if (const char* t = std::getenv("FLEET_THRESHOLD")) main_options.threshold = std::atof(t);
  if (const char* m = std::getenv("FLEET_MIN_PAIRS")) main_options.min_pairs = static_cast<std::size_t>(std::atoi(m));
  if (std::getenv("FLEET_LOJO")) main_options.choose_by_lojo = true;

  for (int h = 0; h < 2; ++h) {
    std::vector<RunPair> history;
    for (const auto& p : all_pairs)
      if (half[ds.rows[p.source].workload] != h) history.push_back(p);
    for (std::size_t a = 0; a < gpus.size(); ++a) {
      for (std::size_t b = a + 1; b < gpus.size(); ++b) {
        const std::string ga = gpus[a], gb = gpus[b];
        auto is_ab = [&](const RunPair& p) {
          const auto& s = ds.rows[p.source].gpu_id;
          const auto& t = ds.rows[p.target].gpu_id;
          return (s == ga && t == gb) || (s == gb && t == ga);
        };
        std::vector<RunPair> held;
        for (const auto& p : history)
          if (!is_ab(p)) held.push_back(p);
        for (const std::string kind : {"seen", "unseen"}) {
          // The seen-pair model is the same for every GPU pair: fitted once per half.
          // Never destroyed: XGBoost's own statics may be gone at exit before ours (as model_bench).
          static auto& seen_model = *new std::map<int, std::shared_ptr<StackedModel>>;
          std::shared_ptr<StackedModel> model;
          if (kind == "seen") {
            if (!seen_model[h]) {
              seen_model[h] = std::make_shared<StackedModel>(fit_model_on_pairs(ds, history, catalog, fopt));
              ++fits;
            }
            model = seen_model[h];
          } else {
            model = std::make_shared<StackedModel>(fit_model_on_pairs(ds, held, catalog, fopt));
            ++fits;
          }
          // The GPU pairs this bundled fit holds (fit --store's rule, store/pairs.hpp).
          const std::set<GpuPairKey> held_by_fit = held_gpu_pairs(ds, kind == "seen" ? history : held);
          // The fleet's jobs on this GPU pair: workloads of the other half run on both.
          std::vector<Job> jobs;
          for (const auto& p : all_pairs)
            if (half[ds.rows[p.source].workload] == h && ds.rows[p.source].gpu_id == ga &&
                ds.rows[p.target].gpu_id == gb)
              jobs.push_back({p.source, p.target});
          if (jobs.size() <= kMaxPairs + 5) continue;
          // Both directions' predictions of every job, once.
          auto predict = [&](std::size_t s, std::size_t t) {
            return model->predict(ds.rows[s].features, ds.rows[s].epoch_s, *catalog.find(ds.rows[s].gpu_id),
                                  *catalog.find(ds.rows[t].gpu_id))
                .epoch_s;
          };
          std::vector<double> p_ab(jobs.size()), p_ba(jobs.size());
          for (std::size_t j = 0; j < jobs.size(); ++j) {
            p_ab[j] = predict(jobs[j].src_row, jobs[j].tgt_row);
            p_ba[j] = predict(jobs[j].tgt_row, jobs[j].src_row);
          }
          // The reused-key check on real same-job pairs: would any be refused?
          for (std::size_t j = 0; j < jobs.size(); ++j) {
            const double est = std::abs(std::log(ds.rows[jobs[j].tgt_row].epoch_s / p_ab[j]));
            const double ets = std::abs(std::log(ds.rows[jobs[j].src_row].epoch_s / p_ba[j]));
            worst_both_ways[kind] = std::max(worst_both_ways[kind], std::min(est, ets));
            if (std::min(est, ets) > std::log(kReusedKeyFactor)) ++refused_same_job[kind];
            ++checked_same_job[kind];
          }
          std::mt19937_64 order_rng(1000 + h);
          for (int o = 0; o < kOrders; ++o) {
            std::vector<std::size_t> order(jobs.size());
            for (std::size_t j = 0; j < order.size(); ++j) order[j] = j;
            std::shuffle(order.begin(), order.end(), order_rng);
            for (std::size_t n : kSteps) {
              std::vector<PairResidual> res;
              for (std::size_t k = 0; k < n; ++k) {
                const std::size_t j = order[k];
                res.push_back({ga, gb, std::log(ds.rows[jobs[j].tgt_row].epoch_s / p_ab[j])});
                res.push_back({gb, ga, std::log(ds.rows[jobs[j].src_row].epoch_s / p_ba[j])});
              }
              const Calibration cal = fit_calibration(res, main_options);
              if (n == kMaxPairs)
                for (const Variant& v : vars) {
                  const Calibration cv = fit_calibration(res, v.options);
                  for (int dir = 0; dir < 2; ++dir) {
                    const std::string s = dir ? gb : ga, t = dir ? ga : gb;
                    std::vector<double> calib, truth;
                    for (std::size_t k = kMaxPairs; k < order.size(); ++k) {
                      const std::size_t j = order[k];
                      calib.push_back((dir ? p_ba[j] : p_ab[j]) * std::exp(cv.log_bias(s, t)));
                      truth.push_back(ds.rows[dir ? jobs[j].src_row : jobs[j].tgt_row].epoch_s);
                    }
                    results[kind][s + "->" + t].variant_at_max[v.name].push_back(mape(calib, truth));
                  }
                }
              for (int dir = 0; dir < 2; ++dir) {
                const std::string s = dir ? gb : ga, t = dir ? ga : gb;
                std::vector<double> base, calib, truth;
                for (std::size_t k = kMaxPairs; k < order.size(); ++k) {
                  const std::size_t j = order[k];
                  const double p = dir ? p_ba[j] : p_ab[j];
                  base.push_back(p);
                  calib.push_back(p * std::exp(cal.log_bias(s, t)));
                  truth.push_back(ds.rows[dir ? jobs[j].src_row : jobs[j].tgt_row].epoch_s);
                }
                Acc& acc = results[kind][s + "->" + t];
                acc.bundled[n].push_back(mape(base, truth));
                acc.calibrated[n].push_back(mape(calib, truth));
                acc.eval_jobs = truth.size();
                if (o == 0 && n == 0) acc.history_jobs.push_back(static_cast<double>(history.size() - held.size()) / 2);
                acc.held = held_by_fit.count({s, t}) > 0;
              }
            }
            if (o < refit_orders && refits) {
              // Refit with the first kMaxPairs jobs' pairs (both directions) in the training data.
              Dataset fleet = ds;
              std::vector<RunPair> train = kind == "seen" ? history : held;
              for (std::size_t k = 0; k < kMaxPairs; ++k) {
                const Job& jb = jobs[order[k]];
                // The fleet's own runs as their own rows and group (as append_store_pairs).
                DatasetRow rs = ds.rows[jb.src_row], rt = ds.rows[jb.tgt_row];
                rs.model = rt.model = "job:" + rs.workload;
                rs.workload = rt.workload = rs.model;
                fleet.rows.push_back(rs);
                fleet.rows.push_back(rt);
                const std::size_t is = fleet.rows.size() - 2, it = fleet.rows.size() - 1;
                train.push_back({is, it, static_cast<double>(kStorePairWeight)});
                train.push_back({it, is, static_cast<double>(kStorePairWeight)});
              }
              const std::size_t first_store = train.size() - 2 * kMaxPairs;
              const StackedModel refit = fit_model_on_pairs(fleet, train, catalog, fopt);
              ++fits;
              // The calibration on top of the refit, from its out-of-fold residuals on the 20 pairs
              // (each job its own fold group: the refit's error on a job it did not see). The
              // in-sample residuals, used before, are those of pairs just fitted: they moved nothing.
              std::vector<PairResidual> rres;
              for (std::size_t i = first_store; i < train.size(); ++i)
                rres.push_back({fleet.rows[train[i].source].gpu_id, fleet.rows[train[i].target].gpu_id,
                                refit.out_of_fold_log_residuals().at(i)});
              const Calibration rcal = fit_calibration(rres);
              for (int dir = 0; dir < 2; ++dir) {
                const std::string s = dir ? gb : ga, t = dir ? ga : gb;
                std::vector<double> pred, base, truth;
                for (std::size_t k = kMaxPairs; k < order.size(); ++k) {
                  const std::size_t j = order[k];
                  const std::size_t sr = dir ? jobs[j].tgt_row : jobs[j].src_row;
                  const std::size_t tr = dir ? jobs[j].src_row : jobs[j].tgt_row;
                  pred.push_back(refit.predict(ds.rows[sr].features, ds.rows[sr].epoch_s,
                                               *catalog.find(ds.rows[sr].gpu_id), *catalog.find(ds.rows[tr].gpu_id))
                                     .epoch_s);
                  base.push_back(dir ? p_ba[j] : p_ab[j]);
                  truth.push_back(ds.rows[tr].epoch_s);
                }
                Acc& acc = results[kind][s + "->" + t];
                std::vector<double> pc;
                for (double v : pred) pc.push_back(v * std::exp(rcal.log_bias(s, t)));
                acc.refit_calibrated.push_back(mape(pc, truth));
                acc.refit.push_back(mape(pred, truth));
                acc.refit_bundled.push_back(mape(base, truth));
              }
            }
          }
          fmt::print(stderr, "half {} {}<->{} {}: {} jobs, {} fits so far ({:.0f} s)\n", h, ga, gb, kind, jobs.size(),
                     fits, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
      }
    }
  }

  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? NAN : s / static_cast<double>(v.size());
  };
  nlohmann::json out;
  out["orders"] = kOrders;
  out["steps"] = kSteps;
  out["store_pair_weight"] = kStorePairWeight;
  out["fits"] = fits;
  out["refit_orders"] = refit_orders;
  for (const auto& [kind, by_pair] : results) {
    fmt::print("\n{} GPU pairs (the bundled model {}): MAPE % on the jobs not yet seen, mean of {} orders x 2 halves\n",
               kind, kind == "seen" ? "was fitted on them" : "never saw them: held out of its fit", kOrders);
    fmt::print("{:<12} {:>5}", "pair", "eval");
    for (std::size_t n : kSteps) fmt::print(" {:>7}", fmt::format("n={}", n));
    fmt::print(" {:>8} {:>9} {:>9} {:>9} {:>11}{}\n", "ratio@20", "refit@20", "ratio", "+calib", "fit--store",
               kind == "unseen" ? fmt::format(" {:>8}", "floor") : "");
    std::vector<double> ratio_all, refit_all, refit_cal_all, product_all, floor_all, floor_jobs;
    std::size_t held_pairs = 0;
    std::map<std::string, std::vector<double>> variant_ratios;
    for (const auto& [pair, acc] : by_pair) {
      fmt::print("{:<12} {:>5}", pair, acc.eval_jobs);
      nlohmann::json curve = nlohmann::json::array();
      for (std::size_t n : kSteps) {
        const double m = mean(acc.calibrated.at(n));
        curve.push_back(m);
        fmt::print(" {:>7.2f}", m);
      }
      const double base = mean(acc.bundled.at(kMaxPairs));
      const double ratio = mean(acc.calibrated.at(kMaxPairs)) / base;
      const double refit_ratio = mean(acc.refit) / mean(acc.refit_bundled);
      const double refit_cal_ratio = mean(acc.refit_calibrated) / mean(acc.refit_bundled);
      ratio_all.push_back(ratio);
      refit_all.push_back(refit_ratio);
      refit_cal_all.push_back(refit_cal_ratio);
      // What fit --store gives: the calibration for a held GPU pair, the refit for any other
      // (serve's calibration after a refit uses its in-sample residuals, which moved nothing).
      const double product_ratio = acc.held ? ratio : refit_ratio;
      product_all.push_back(product_ratio);
      held_pairs += acc.held ? 1 : 0;
      for (const auto& [v, m] : acc.variant_at_max) variant_ratios[v].push_back(mean(m) / base);
      // The floor of an unseen GPU pair: the model fitted with every history pair of it (the "seen"
      // model, scored on the same jobs in the same orders) over the model fitted without them.
      double floor = NAN;
      if (kind == "unseen" && results.count("seen") && results.at("seen").count(pair))
        floor = mean(results.at("seen").at(pair).bundled.at(kMaxPairs)) / base;
      if (kind == "unseen") floor_jobs.push_back(mean(acc.history_jobs));
      if (kind == "unseen") floor_all.push_back(floor);
      fmt::print(" {:>8.3f} {:>9.2f} {:>9.3f} {:>9.3f} {:>9.3f} {}{}\n", ratio, mean(acc.refit), refit_ratio,
                 refit_cal_ratio, product_ratio, acc.held ? "c" : "r", kind == "unseen" ? fmt::format(" {:>8.3f}", floor) : "");
      out[kind][pair] = {{"eval_jobs", acc.eval_jobs},
                         {"bundled_mape_pct", base},
                         {"calibrated_mape_pct", curve},
                         {"ratio_at_20", ratio},
                         {"refit_at_20_mape_pct", mean(acc.refit)},
                         {"refit_bundled_mape_pct", mean(acc.refit_bundled)},
                         {"refit_ratio", refit_ratio},
                         {"refit_calibrated_ratio", refit_cal_ratio},
                         {"held_by_bundled_fit", acc.held},
                         {"fit_store_ratio", product_ratio}};
      if (kind == "unseen") {
        out[kind][pair]["floor_ratio"] = floor;
        out[kind][pair]["history_jobs"] = mean(acc.history_jobs);
      }
    }
    auto worst = [](const std::vector<double>& v) { return v.empty() ? NAN : *std::max_element(v.begin(), v.end()); };
    fmt::print("ratio to the bundled model at n=20, mean (worst) over GPU pairs: calibration {:.3f} ({:.3f}), "
               "refit {:.3f} ({:.3f}), refit + calibration {:.3f} ({:.3f})\n",
               mean(ratio_all), worst(ratio_all), mean(refit_all), worst(refit_all), mean(refit_cal_all),
               worst(refit_cal_all));
    fmt::print("fit --store (c: held by the bundled fit, {} of {} GPU pairs, calibration only; r: refit): mean {:.3f} "
               "(worst {:.3f})\n", held_pairs, product_all.size(), mean(product_all), worst(product_all));
    out[kind + "_fit_store"] = {{"mean_ratio", mean(product_all)}, {"worst_ratio", worst(product_all)},
                                {"held_gpu_pairs", held_pairs}};
    if (kind == "unseen") {
      fmt::print("floor (the model fitted with all history jobs of the GPU pair, {:.0f} per direction on average, "
                 "scored on the same jobs): mean {:.3f}, worst {:.3f}; the refit with 20 goes {:.0f} % of the way "
                 "from 1 to it\n",
                 mean(floor_jobs), mean(floor_all), worst(floor_all), 100 * (1 - mean(refit_all)) / (1 - mean(floor_all)));
      out["unseen_floor"] = {{"mean_ratio", mean(floor_all)}, {"worst_ratio", worst(floor_all)}};
    }
    for (const auto& [v, r] : variant_ratios) {
      fmt::print("  calibration variant {:<14} mean {:.3f} worst {:.3f}\n", v, mean(r), worst(r));
      out[kind + "_variants"][v] = {{"mean_ratio", mean(r)}, {"worst_ratio", worst(r)}};
    }
  }
  for (const auto& [kind, worst] : worst_both_ways) {
    fmt::print("reused-key check on {} same-job pairs ({}): {} refused; the closest call was {:.2f}x off both ways "
               "(limit {}x)\n", checked_same_job[kind], kind, refused_same_job[kind], std::exp(worst), kReusedKeyFactor);
    out["reused_key_check"][kind] = {{"pairs", checked_same_job[kind]}, {"refused", refused_same_job[kind]},
                                     {"closest_factor", std::exp(worst)}};
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out["seconds"] = secs;
  fmt::print("\n{} fits, {:.0f} s\n", fits, secs);
  std::ofstream(out_dir + "/fleet_replay.json") << out.dump(2) << "\n";

  // SVG: calibrated / bundled MAPE against n, one line per ordered GPU pair; unseen solid, seen dashed.
  const double w = 640, hgt = 400, l = 60, r = 20, t = 30, b = 50;
  double ymin = 0.4, ymax = 1.1;
  for (const auto& [kind, by_pair] : results)
    for (const auto& [pair, acc] : by_pair)
      for (std::size_t n : kSteps) {
        const double y = mean(acc.calibrated.at(n)) / mean(acc.bundled.at(n));
        ymin = std::min(ymin, y);
        ymax = std::max(ymax, y);
      }
  auto X = [&](double n) { return l + (w - l - r) * n / static_cast<double>(kMaxPairs); };
  auto Y = [&](double y) { return t + (hgt - t - b) * (ymax - y) / (ymax - ymin); };
  std::string svg = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="11">)", w, hgt);
  svg += fmt::format(R"(<text x="{}" y="18" font-size="13">MAPE on unseen jobs / bundled model alone, vs measured pairs learned</text>)", l);
  for (double y = std::ceil(ymin * 10) / 10; y <= ymax + 1e-9; y += 0.1)
    svg += fmt::format(R"(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#ddd"/><text x="{}" y="{:.1f}" text-anchor="end">{:.1f}</text>)",
                       l, w - r, Y(y), Y(y), l - 5, Y(y) + 4, y);
  for (std::size_t n : kSteps)
    svg += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">{}</text>)", X(static_cast<double>(n)), hgt - b + 15, n);
  svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">measured pairs per GPU pair</text>)", (l + w - r) / 2, hgt - 15);
  svg += fmt::format(R"(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#c33" stroke-dasharray="2,2"/>)", l, w - r, Y(0.7), Y(0.7));
  int color = 0;
  const char* palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                           "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939"};
  for (const auto& [kind, by_pair] : results) {
    color = 0;
    for (const auto& [pair, acc] : by_pair) {
      std::string pts;
      for (std::size_t n : kSteps)
        pts += fmt::format("{:.1f},{:.1f} ", X(static_cast<double>(n)), Y(mean(acc.calibrated.at(n)) / mean(acc.bundled.at(n))));
      svg += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="1.5" {} points="{}"><title>{} {}</title></polyline>)",
                         palette[color++ % 12], kind == "seen" ? R"(stroke-dasharray="5,3")" : "", pts, kind, pair);
    }
  }
  svg += fmt::format(R"(<text x="{}" y="{}">solid: pairs held out of the bundled fit; dashed: pairs it saw; red: 0.7 (the target)</text>)", l, hgt - 2);
  svg += "</svg>\n";
  std::ofstream(out_dir + "/fleet_replay.svg") << svg;
  std::fflush(stdout);
  return 0;
}
