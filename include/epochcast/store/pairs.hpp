// Measured cross-GPU pairs from the store: runs with the same job key on different GPU types.
// A pair whose epoch times disagree wildly with what each run's own features predict for the
// other GPU (both ways) is refused with a reason: a job key reused for another workload.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "epochcast/model/dataset.hpp"
#include "epochcast/store/run_record.hpp"

namespace epochcast {

// Beyond this factor between measured and predicted target time, in both directions, two runs
// are taken for different workloads. On the bundled dataset's 758 real same-job pairs
// (bench/fleet_replay_bench.cpp, models fitted without those jobs) 2.5 refused 2 of them (the
// closest call 2.57x off both ways); 3 refuses none. A reused key is usually 10x or more apart.
inline constexpr double kReusedKeyFactor = 3.0;

// A GPU pair the training pairs already hold at least this many of learns from the store through
// the calibration only, not the refit: on the fleet replay a refit with 20 store pairs of such a
// pair was up to 5.3 % worse than the bundled model on it (v100->p100), the calibration at most
// 0.5 % (docs/store.md, "fit --store"). 20: the "after 20 measured pairs".
// Guarded by PairsTest.HeldGpuPairsCalibrateOnly and ServeStore.RefitLearnsOnlyGpuPairsTheBundledDataLacks.
inline constexpr std::size_t kHeldGpuPairMinPairs = 20;

struct MeasuredPair {
  std::string job_key;
  std::int64_t source_run = 0, target_run = 0;  // store row ids
  std::string source_gpu, target_gpu;
  double source_epoch_s = 0, target_epoch_s = 0;
};

struct RefusedPair {
  std::string job_key;
  std::int64_t source_run = 0, target_run = 0;
  std::string reason;
};

struct PairSet {
  std::vector<MeasuredPair> pairs;    // both directions of every accepted (job, GPU, GPU)
  std::vector<RefusedPair> refused;   // one per refused unordered pair
};

using GpuPairKey = std::pair<std::string, std::string>;  // (source GPU id, target GPU id)

// The ordered GPU pairs `pairs` holds at least kHeldGpuPairMinPairs of (pairs counted, not their weights).
[[nodiscard]] std::set<GpuPairKey> held_gpu_pairs(const Dataset& dataset, const std::vector<RunPair>& pairs);

// `set` split by the rule above: the pairs a refit learns from, and per held GPU pair the
// count of those left to the calibration.
struct HeldSplit {
  PairSet train;                                     // refused pairs stay here
  std::map<GpuPairKey, std::size_t> calibration_only;  // directed pairs per held GPU pair
};
[[nodiscard]] HeldSplit split_held_pairs(const PairSet& set, const std::set<GpuPairKey>& held);

// Predicted epoch time (s) of `source`'s workload on `target_gpu`, from its features; <= 0 or
// NaN: unknown (the pair is then accepted unchecked).
using EpochPredictor = std::function<double(const RunRecord& source, const std::string& target_gpu)>;

// Per job key and GPU type the latest run with a measured epoch time; every two GPU types of a
// key make a pair (both directions), checked with `predict` (kReusedKeyFactor).
[[nodiscard]] PairSet measured_pairs(const std::vector<RunRecord>& runs, const EpochPredictor& predict);

// How a store pair's weight enters the fit: as RunPair::weight (each pair once, every learner
// weighing its row), or as that many copies of the pair (the way before row weights: the
// reference bench/store_scale_bench measures against; the same fit for ridge and kNN, to
// tolerance for the others, at ~3x the store rows).
enum class PairWeighting { kRowWeight, kDuplicate };

// The store's runs that form accepted pairs as dataset rows (workload and CNN model
// "job:<key>": their own fold group) and the pairs between them, each counting `weight` times,
// appended to `dataset` / `pairs`. Returns the store row ids used, sorted.
std::vector<std::int64_t> append_store_pairs(const std::vector<RunRecord>& runs, const PairSet& set, int weight,
                                             Dataset& dataset, std::vector<RunPair>& pairs,
                                             PairWeighting how = PairWeighting::kRowWeight);

// "3, 5-9, 12": a short list of row ids for messages and the model file.
[[nodiscard]] std::string compress_ids(const std::vector<std::int64_t>& sorted_ids);

}  // namespace epochcast
