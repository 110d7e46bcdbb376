// The model's input for one (source run, target GPU) pair: the source run's statistics, its
// epoch time, both GPUs' specs and their ratios. The names are the model file's schema.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "epochcast/features/feature_row.hpp"
#include "epochcast/model/gpu_catalog.hpp"

namespace epochcast {

struct PairSchema {
  bool include_memory = false;
  std::vector<std::size_t> source_features;  // indices into FeatureRow::values
  std::vector<std::string> names;
  // Columns the physical prior reads (see prior_log_ratio).
  std::size_t prior_memory_split = 0, prior_fp32_and_bandwidth = 0, ratio_fp32 = 0, ratio_bandwidth = 0;
};

[[nodiscard]] const PairSchema& pair_schema(bool include_memory);
// Writes pair_schema(...).names.size() values to `out`.
void pair_features(const PairSchema& schema, const FeatureRow& source, double source_epoch_s,
                   const GpuSpec& source_gpu, const GpuSpec& target_gpu, std::span<double> out);

// The physical prior of log(target/source) for a pair-feature vector: the Amdahl split where
// the memory-busy share of the epoch scales with bandwidth, the rest of the busy share with
// FP32^busy x SM clock^(1 - busy) (small kernels of a mostly idle GPU scale with the clock) and
// the idle share not at all. Falls back when channels are missing: without memory
// utilisation the busy share scales with sqrt(FP32 x bandwidth); without GPU utilisation the
// whole epoch does. Always finite when both GPUs have FP32 and bandwidth in the catalog.
[[nodiscard]] double prior_log_ratio(const PairSchema& schema, std::span<const double> x);

}  // namespace epochcast
