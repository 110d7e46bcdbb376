// `epochcast eval --store DB`: the store's measured pairs scored leave-one-job-out, the model
// alone next to the model with the store's calibration fitted on every other job's pairs.
#pragma once

#include <string>
#include <vector>

#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/model/stacked_model.hpp"
#include "epochcast/store/calibration.hpp"
#include "epochcast/store/run_record.hpp"

namespace epochcast {

struct StorePairScore {
  std::string source_gpu, target_gpu;
  std::size_t pairs = 0;
  double model_mape_pct = 0;       // the model alone
  double calibrated_mape_pct = 0;  // with the calibration from the other jobs
};

struct StoreEvaluation {
  std::size_t jobs = 0, pairs = 0;
  double model_mape_pct = 0, calibrated_mape_pct = 0;
  std::vector<StorePairScore> per_gpu_pair;
  std::vector<std::string> refused;  // pairs not used, with the reason
};

// Error(kInvalidArgument) when the store holds no measured pair (no job key on two GPU types).
[[nodiscard]] StoreEvaluation evaluate_store(const std::vector<RunRecord>& runs, const StackedModel& model,
                                             const GpuCatalog& catalog, const CalibrationOptions& options = {});

}  // namespace epochcast
