// The job store as the front ends see it (`epochcast jobs …`; docs/store.md): the requests and
// results of Service's jobs_* operations, and their JSON. The store itself is store/job_store.hpp.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "epochcast/store/job_store.hpp"
#include "epochcast/store/pairs.hpp"
#include "epochcast/store/run_record.hpp"

namespace epochcast {

// Which store and which of its runs. validate() throws FieldError naming the field.
struct JobsRequest {
  std::string store_path;  // "": $EPOCHCAST_STORE; neither: FieldError("store_path")
  std::string job_key;     // list: only this key's runs; forget: every run of this key
  std::int64_t run_id = 0; // show, forget

  void validate() const;
  // store_path, else $EPOCHCAST_STORE, else FieldError("store_path").
  [[nodiscard]] std::string resolved_store_path() const;
};

struct JobsImport {
  ImportResult result;
  std::string store;
};

struct JobsList {
  std::string store;
  int schema_version = 0;
  std::vector<RunRecord> runs;
};

// One (source GPU, target GPU) of the store: the calibration its measured pairs give the
// service's model, and the running error of predictions later checked on the target.
struct GpuPairStats {
  std::string source_gpu, target_gpu;
  std::size_t pairs = 0;
  double mean_log_residual = 0, calibration_log = 0;
  std::size_t checked_predictions = 0;
  std::optional<double> prediction_mape_pct;  // none when nothing was checked
};

struct JobPairs {
  std::string store;
  double residual_sd_log = 0;
  std::vector<GpuPairStats> gpu_pairs;  // sorted by (source, target)
  std::vector<RefusedPair> refused;
};

[[nodiscard]] nlohmann::json to_json(const JobsList& list);  // without each run's features
[[nodiscard]] nlohmann::json to_json(const RunRecord& run);  // whole, as `jobs export` writes it
[[nodiscard]] nlohmann::json to_json(const JobPairs& pairs);

}  // namespace epochcast
