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
};

[[nodiscard]] const PairSchema& pair_schema(bool include_memory);
// Writes pair_schema(...).names.size() values to `out`.
void pair_features(const PairSchema& schema, const FeatureRow& source, double source_epoch_s,
                   const GpuSpec& source_gpu, const GpuSpec& target_gpu, std::span<double> out);

}  // namespace epochcast
