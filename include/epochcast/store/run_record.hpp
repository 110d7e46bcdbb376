// One analysed run as the job store keeps it: which GPU, what detection found, the feature row,
// the measured epoch time, and what the model predicted from it for every target GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "epochcast/features/feature_row.hpp"

namespace epochcast {

struct StoredPrediction {
  std::string target_gpu;     // catalog id
  double epoch_s = 0;         // what predict answered (calibration included)
  double lo_s = 0, hi_s = 0;  // its interval
  double calibration_log = 0; // the store calibration's log factor applied (0: none)
};

struct RunRecord {
  std::int64_t id = 0;         // row id in this store (0 before it is recorded)
  std::string uid;             // unique across stores: export/import keeps it, import skips known ones
  std::string recorded_at;     // UTC, "2026-12-01T21:40:00Z"
  std::string job_key;         // operator-supplied; "" = none (the run forms no pair)
  std::string gpu;             // catalog id of the GPU it ran on
  std::string catalog_version; // catalog_version() of the catalog that named the GPU
  std::string trace;           // where the metrics came from (path, upload name)
  // Detection.
  bool detected = false;
  double period_s = 0;
  double confidence = 0;
  int epochs_found = 0;
  std::string detect_reason;
  // The measured epoch time in seconds (0: unknown, e.g. detection abstained) and its origin
  // ("detected", "given").
  double epoch_s = 0;
  std::string epoch_time_from;
  FeatureRow features;
  std::string model_version;   // model_version() of the model that predicted
  std::vector<StoredPrediction> predictions;

  [[nodiscard]] const StoredPrediction* prediction_for(const std::string& gpu_id) const {
    for (const auto& p : predictions)
      if (p.target_gpu == gpu_id) return &p;
    return nullptr;
  }
};

// A prediction checked against the run it predicted: run `run_id` on `target_gpu` measured
// `measured_s`; run `predicted_by` (on `source_gpu`, same job key) had predicted `predicted_s`.
struct FeedbackRecord {
  std::int64_t run_id = 0, predicted_by = 0;
  std::string job_key, source_gpu, target_gpu;
  double predicted_s = 0, measured_s = 0;
  std::string model_version;
  [[nodiscard]] double abs_pct_error() const;  // |predicted - measured| / measured * 100
};

// The running error of the checked predictions of one (source GPU, target GPU): what `jobs
// pairs` lists and `/metrics` exposes as epochcast_prediction_error_ratio.
struct PairPredictionError {
  std::string source_gpu, target_gpu;
  std::size_t checked = 0;           // feedback rows
  double mean_abs_error_ratio = 0;   // mean |predicted - measured| / measured (0.05: 5 %)
  double mean_log_ratio = 0;         // mean log(predicted / measured): > 0 predicted too slow
};

}  // namespace epochcast
