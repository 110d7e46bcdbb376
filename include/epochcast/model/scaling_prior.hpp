// The GPU-scaling prior: how a job's time changes from one GPU to another, a small physical
// model whose few numbers are fitted on published measurements (the public throughput table),
// not on the bundled traces. The job's epoch splits into an idle share (1 − busy: input
// pipeline, host), a memory-bound share and a compute-bound share; the memory share scales with
// the bandwidth ratio to the power `bandwidth_exp`, the compute share with the precision's
// compute-peak ratio to the power `compute_exp` times the power-limit ratio to `power_exp`
// (how much of a spec ratio is realised), separately for fp32 code and mixed precision.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/model/precision.hpp"
#include "epochcast/model/public_throughput.hpp"

namespace epochcast {

struct ScalingParams {
  double compute_exp = 1;    // realised share of the compute-peak ratio (log-space exponent)
  double bandwidth_exp = 1;  // realised share of the bandwidth ratio
  double power_exp = 0;      // exponent of the power-limit ratio on the compute share
  double memory_share = 0.5; // memory-bound share of busy time when the trace does not tell
  double interval_q_log = 0; // 90 % of leave-one-GPU-out |log error| on the public table (0: unknown)
};

struct ScalingPrior {
  ScalingParams fp32_code, mixed;
  std::string fitted_on;     // "data/public-throughput/lambda_pytorch_1gpu.csv: 12 GPU types, 338 rows"
  [[nodiscard]] const ScalingParams& params(PrecisionClass c) const {
    return c == PrecisionClass::kMixed ? mixed : fp32_code;
  }
};

// Where on the family a job sits, from its source trace: busy = mean utilization.gpu / 100,
// memory = mean utilization.memory / 100 (capped at busy; NaN: use the fitted share).
struct JobPosition {
  double busy = 1;
  double memory = NAN;
};

// log(target time / source time). The compute ratio moves from the SM-clock ratio (a mostly idle
// GPU runs small latency-bound kernels) to the realised peak ratio (a GPU busy all the time), as
// format 4's prior did. Finite whenever both GPUs have positive FP32 and bandwidth.
[[nodiscard]] double scaling_log_ratio(const ScalingParams& p, const JobPosition& job, const GpuSpec& source,
                                       const GpuSpec& target, Precision precision);

// Fits both families on the table (optionally without one GPU type: the leave-one-out protocol).
// per_workload_position: each workload's memory and idle shares are fitted too (as a trace's
// metrics would place it); else one position per family. Deterministic.
struct ScalingFit {
  ScalingPrior prior;
  // Fitted (memory share, idle share) of each workload per family, for the evaluation.
  std::map<std::pair<PrecisionClass, std::string>, std::pair<double, double>> workload_position;
  std::size_t rows_used = 0;
};
[[nodiscard]] ScalingFit fit_scaling_prior(const PublicTable& table, const GpuCatalog& catalog,
                                           const std::string& exclude_gpu = {},
                                           bool per_workload_position = true);

// The prior `fit` uses: fitted on the bundled public table with the bundled catalog (the table's
// GPU ids are its ids), each family's interval from its leave-one-GPU-out errors
// (evaluate_public). Computed once per process. Throws when the table is unreadable.
[[nodiscard]] const ScalingPrior& calibrated_scaling_prior();

}  // namespace epochcast
