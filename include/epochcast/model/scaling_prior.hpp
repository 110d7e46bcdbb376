// The GPU-scaling prior: how a job's time changes from one GPU to another, a small physical
// model whose few numbers are fitted on published measurements (the public throughput table),
// not on the bundled traces. The job's epoch splits into an idle share (1 − busy: input
// pipeline, host), a memory-bound share and a compute-bound share; the memory share scales with
// the bandwidth ratio to the power `bandwidth_exp`, the compute share with the precision's
// compute-peak ratio to the power `compute_exp` times the power-limit ratio to `power_exp`
// (how much of a spec ratio is realised), separately for fp32 code and mixed precision. A
// pre-Ampere GPU's FP16 tensor peak counts at a fitted share (legacy_tensor_eff).
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
  double memory_share = 0.5; // memory-bound share of the busy time (scales with bandwidth)
  double fixed_share = 0;    // share of the busy time that scales with the SM clock only (launch- and latency-bound)
  // Share of the FP16 tensor peak a GPU from before Ampere realises (Volta, Turing: no TF32
  // tensor cores; legacy_tensor_path); fitted for mixed precision, 1 for fp32 code (those GPUs
  // run it on their FP32 units, at their FP32 peak).
  double legacy_tensor_eff = 1;
  // Power limits are clamped to the range of the GPUs the exponent was fitted on (0: no clamp):
  // a fitted term is not extrapolated (a 70 W T4 is read as the table's lowest, 150 W).
  double power_min_w = 0, power_max_w = 0;
  double interval_q_log = 0; // 90 % of leave-one-GPU-out |log error| on the public table (0: unknown)
};

struct ScalingPrior {
  ScalingParams fp32_code, mixed;
  // The GPU the shares are measured on (a100-80gb of the bundled catalog): a job's busy time on
  // GPU g relative to it is busy_level_log(…, reference, g, …).
  GpuSpec reference;
  std::string fitted_on;     // "data/public-throughput/lambda_pytorch_1gpu.csv: 12 GPU types, 338 rows"
  [[nodiscard]] const ScalingParams& params(PrecisionClass c) const {
    return c == PrecisionClass::kMixed ? mixed : fp32_code;
  }
};

// log of a job's busy time on `gpu` relative to `reference`: on the reference it splits by the
// fitted shares into fixed, memory-bound and compute-bound parts; the fixed part scales with the
// SM-clock ratio, the memory part with the
// bandwidth ratio^bandwidth_exp, the compute part with the realised compute ratio (peak^compute_exp,
// a pre-Ampere FP16 tensor peak times legacy_tensor_eff,
// x power limit^power_exp), which moves toward the SM-clock ratio as `busy` falls (a mostly idle
// GPU runs small latency-bound kernels), as format 4's prior did.
[[nodiscard]] double busy_level_log(const ScalingParams& p, double busy, const GpuSpec& reference, const GpuSpec& gpu,
                                    Precision precision);
// log(target time / source time) of a job whose GPU is busy (mean utilization.gpu / 100; NaN: 1)
// that share of the source epoch: the idle rest does not scale, the busy rest by
// exp(busy_level_log(target) − busy_level_log(source)). utilization.memory is not used: nothing
// public ties it to the shares. Finite whenever the GPUs have positive peaks and bandwidth.
[[nodiscard]] double scaling_log_ratio(const ScalingParams& p, double busy, const GpuSpec& reference,
                                       const GpuSpec& source, const GpuSpec& target, Precision precision);

// Fits both families on the table (optionally without one GPU type: the leave-one-out protocol).
// per_workload_position: each workload's memory and fixed shares are fitted too (the best a
// job's position could be known: an upper bound for the evaluation); else one pair of shares
// per family, what predict uses. Deterministic.
struct ScalingFit {
  ScalingPrior prior;
  // Each workload's parameters (the family's exponents, its own shares) per family.
  std::map<std::pair<PrecisionClass, std::string>, ScalingParams> workload_params;
  std::size_t rows_used = 0;
};
// exclude_workload: fit without that workload too (leave one workload out: does the family
// hold for a job it never saw?).
[[nodiscard]] ScalingFit fit_scaling_prior(const PublicTable& table, const GpuCatalog& catalog,
                                           const std::string& exclude_gpu = {},
                                           bool per_workload_position = false,
                                           const std::string& exclude_workload = {});

// The prior `fit` uses: fitted on the bundled public table with the bundled catalog (the table's
// GPU ids are its ids), each family's interval from its leave-one-GPU-out errors
// (evaluate_public). Computed once per process. Throws when the table is unreadable.
[[nodiscard]] const ScalingPrior& calibrated_scaling_prior();
// Sets the process's calibrated prior to one computed before from the same inputs, unless it is
// computed already: default_model() passes a cached default model's prior (its cache key covers
// the catalog, the public table, its names and the program), so a refit in that process does
// not recompute it (~4.7 s of CPU, docs/store.md "Speed"). Only the figures the model file keeps
// are used (busy_level_log's), so fits with the adopted prior equal fits with the computed one.
void adopt_calibrated_scaling_prior(const ScalingPrior& prior);

}  // namespace epochcast
