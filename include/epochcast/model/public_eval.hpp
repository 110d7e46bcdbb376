// `epochcast eval --protocol public`: leave one GPU type of the public throughput table out,
// fit the scaling prior on the others, and predict that GPU's time ratio to every other GPU for
// every workload, per precision family; next to the spec-sheet prior and format 5's prior.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/model/precision.hpp"
#include "epochcast/model/public_throughput.hpp"

namespace epochcast {

// The priors compared, in report order.
inline const std::vector<std::string> kPublicEvalPriors = {
    "calibrated",                // the fitted family, one pair of shares per precision: what predict uses
    "workload_shares_known",     // the family with each workload's shares fitted on the other GPUs (a bound)
    "spec_sheet",               // precision-aware spec ratios, nothing fitted (exponents 1, half memory)
    "format5_prior",            // today's amdahl.memory_clock_split at busy 1, memory 0.5: FP32 and bandwidth
    // The floor of any job-agnostic prior: one constant per (held-out GPU, other GPU, precision),
    // the median of that pair's true log ratios over its workloads (an oracle: it reads the truth).
    "pair_oracle",
};

struct PublicEvalCell {
  std::string gpu;             // held-out GPU (the target of every ratio)
  std::string family;          // "fp16" (mixed precision) or "tf32" (fp32 code)
  std::size_t ratios = 0;
  std::map<std::string, double> median_pct, mean_pct;  // by prior name
  double coverage_pct = 0;     // calibrated (predict's): share inside its 90 % interval (q from the other GPUs)
};

// Leave one workload out: the calibrated family fitted without the workload (all GPUs) predicts
// its time ratio between every two GPUs. The job-side check beside leave one GPU out.
struct PublicWorkloadCell {
  std::string workload;
  std::string family;
  std::size_t ratios = 0;  // GPU pairs, each once
  double median_pct = 0, mean_pct = 0;
};

struct PublicEvalReport {
  std::string table;
  std::vector<PublicEvalCell> cells;  // by GPU, then family
  std::vector<PublicWorkloadCell> workload_cells;  // by workload, then family
  std::map<std::string, double> lowo_median_pct;   // family -> calibrated, leave one workload out
  // Every held-out ratio's log error of the calibrated prior, per family.
  std::map<std::string, std::vector<double>> calibrated_log_errors;
  std::map<std::string, std::map<std::string, double>> overall_median_pct;  // family -> prior -> median
  std::map<std::string, double> overall_coverage_pct;                      // family
  // The least overall median error any job-agnostic prior can reach (one predicted ratio per
  // GPU pair and precision, whatever the workload), per family: the smallest r such that, with
  // the best constant per pair, half of the held-out ratios lie within r. An exact bound, not a
  // fit: the calibrated median cannot go below it without knowing the job.
  std::map<std::string, double> job_agnostic_floor_pct;
  // The median error of the best per-GPU level (one log-time level per GPU and precision, as
  // every job-agnostic prior of this family gives, the ratio their difference), fitted in
  // sample on every GPU including the held-out one by least absolute log error: no prior that
  // scores a GPU by its figures alone can do better than a level fitted on the answers.
  std::map<std::string, double> gpu_level_oracle_pct;
  // 90 % quantile of |log error| of the calibrated prior over all held-out ratios of a family.
  [[nodiscard]] double interval_q_log(PrecisionClass c) const;
};

// workloads_too: also leave one workload out (workload_cells, lowo_median_pct); the interval
// calibration (calibrated_scaling_prior) needs only the GPU side.
[[nodiscard]] PublicEvalReport evaluate_public(const PublicTable& table, const GpuCatalog& catalog,
                                               bool workloads_too = true);

}  // namespace epochcast
