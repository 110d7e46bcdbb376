// epochcast eval --protocol public: the table and JSON of evaluate_public (docs/model.md).
#include <fmt/core.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "epochcast/service/service.hpp"

namespace epochcast::cli {

void run_public_eval(const std::string& catalog_path, bool json) {
  const PublicEvaluation evaluation = Service().evaluate_public(catalog_path);
  const PublicTable& table = evaluation.table;
  for (const auto* m : {&table.unknown_gpus, &table.unknown_workloads, &table.unknown_precisions})
    for (const auto& [name, n] : *m)
      fmt::print(stderr, "epochcast: note: {}: {} row(s) skipped: '{}' is not in names.csv or the catalog\n",
                 table.source, n, name);
  const PublicEvalReport& r = evaluation.report;
  const ScalingPrior& all = evaluation.fitted_on_all;
  if (json) {
    nlohmann::json j;
    j["protocol"] = "public";
    j["table"] = r.table;
    j["rows"] = table.rows.size();
    j["rows_skipped"] = table.rows_skipped();
    nlohmann::json cells = nlohmann::json::array();
    for (const auto& c : r.cells)
      cells.push_back({{"gpu", c.gpu}, {"precision", c.family}, {"ratios", c.ratios}, {"median_error_pct", c.median_pct},
                       {"mean_error_pct", c.mean_pct}, {"interval_coverage_pct", c.coverage_pct}});
    j["cells"] = cells;
    nlohmann::json workloads = nlohmann::json::array();
    for (const auto& c : r.workload_cells)
      workloads.push_back({{"workload", c.workload}, {"precision", c.family}, {"ratios", c.ratios},
                           {"median_error_pct", c.median_pct}, {"mean_error_pct", c.mean_pct}});
    j["leave_one_workload_out"] = {{"cells", workloads}, {"median_error_pct", r.lowo_median_pct}};
    j["overall_median_error_pct"] = r.overall_median_pct;
    j["interval_coverage_pct"] = r.overall_coverage_pct;
    j["job_agnostic_floor_pct"] = r.job_agnostic_floor_pct;
    j["gpu_level_oracle_pct"] = r.gpu_level_oracle_pct;
    for (auto [name, p] : {std::pair{"fp16", all.mixed}, std::pair{"tf32", all.fp32_code}})
      j["fitted_on_all"][name] = {{"compute_exp", p.compute_exp}, {"bandwidth_exp", p.bandwidth_exp},
                                  {"power_exp", p.power_exp}, {"memory_share", p.memory_share}, {"fixed_share", p.fixed_share},
                                  {"legacy_tensor_eff", p.legacy_tensor_eff}};
    std::cout << j.dump(2) << "\n";
    return;
  }
  fmt::print("protocol public: {} ({} rows, {} skipped); leave one GPU type out, error of the predicted time ratio\n",
             r.table, table.rows.size(), table.rows_skipped());
  fmt::print("{:<16} {:<5} {:>6}  {:>10} {:>10} {:>10} {:>10} {:>10}  {:>8}\n", "held-out GPU", "prec", "ratios",
             "calibrated", "known", "spec", "format5", "pair", "cover90");
  fmt::print("{:<16} {:<5} {:>6}  {:>10} {:>10} {:>10} {:>10} {:>10}  {:>8}\n", "", "", "", "med/mean%", "med/mean%",
             "med/mean%", "med/mean%", "med/mean%", "%");
  for (const auto& c : r.cells) {
    fmt::print("{:<16} {:<5} {:>6} ", c.gpu, c.family, c.ratios);
    for (const auto& p : kPublicEvalPriors) fmt::print(" {:>4.1f}/{:>5.1f}", c.median_pct.at(p), c.mean_pct.at(p));
    fmt::print("  {:>8.1f}\n", c.coverage_pct);
  }
  for (const auto& [family, m] : r.overall_median_pct) {
    fmt::print("all              {:<5} median:", family);
    for (const auto& p : kPublicEvalPriors) fmt::print(" {} {:.1f} %", p, m.at(p));
    fmt::print("; 90 % interval coverage {:.1f} %; least median of any job-agnostic prior {:.1f} %, of the best GPU "
               "levels fitted in sample {:.1f} %\n",
               r.overall_coverage_pct.at(family), r.job_agnostic_floor_pct.at(family), r.gpu_level_oracle_pct.at(family));
  }
  fmt::print("\nleave one workload out (calibrated, fitted without the workload on every GPU; each GPU pair once)\n");
  fmt::print("{:<18} {:<5} {:>6}  {:>10}\n", "held-out workload", "prec", "ratios", "med/mean%");
  for (const auto& c : r.workload_cells)
    fmt::print("{:<18} {:<5} {:>6}  {:>4.1f}/{:>5.1f}\n", c.workload, c.family, c.ratios, c.median_pct, c.mean_pct);
  for (const auto& [family, m] : r.lowo_median_pct)
    fmt::print("all                {:<5} median: calibrated {:.1f} % (leave one GPU out: {:.1f} %)\n", family, m,
               r.overall_median_pct.at(family).at("calibrated"));
  for (auto [name, p] : {std::pair{"fp16", all.mixed}, std::pair{"tf32", all.fp32_code}})
    fmt::print("fitted on all GPUs, {}: compute_exp {:.3f}, bandwidth_exp {:.3f}, power_exp {:.3f}, memory_share {:.3f}, fixed_share {:.3f}, "
               "legacy_tensor_eff {:.3f}\n",
               name, p.compute_exp, p.bandwidth_exp, p.power_exp, p.memory_share, p.fixed_share, p.legacy_tensor_eff);
}

}  // namespace epochcast::cli
