// The service's side of the job store (--store DB): records every analysed run, applies the
// store's per GPU pair calibration to predictions, reports the feedback a run makes possible.
// One connection per Service, serialised by a mutex (the server predicts on many threads).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/model/stacked_model.hpp"
#include "epochcast/service/report.hpp"
#include "epochcast/store/calibration.hpp"
#include "epochcast/store/job_store.hpp"

namespace epochcast {

class StoreLink {
 public:
  // Opens (creates) the store for writing.
  StoreLink(const std::string& path, const GpuCatalog& catalog);

  // The calibration of the store's measured pairs for `model`. Kept between calls: after a
  // record of this link only that run's job key is recomputed; the store is read again in full
  // for another model, after invalidate(), or when its pairable runs (count, largest id) are not
  // what this link recorded (another process, an import, a forget).
  [[nodiscard]] Calibration calibration_for(const StackedModel& model) const;
  // The next calibration_for reads the store in full (a new model is being swapped in).
  void invalidate() const;
  // How many times calibration_for has read the store in full (tests, bench/store_scale_bench).
  [[nodiscard]] std::size_t full_reads() const;
  // Records the run of `report` (features from its window), predicted by `model_version`, and
  // the feedback it makes possible; sets report.store_run_id and adds a line per checked
  // prediction to the warnings. True when the run may have formed a new measured pair (a job
  // key and a measured epoch time): the caller refreshes the calibration. `once`: not when
  // the store holds a run of the same trace name (JobStore::record_once; store_run_id is then
  // that run's, and nothing is added).
  bool record(PredictReport& report, const FeatureRow& features, const std::string& model_version, bool once = false);
  // The running error of checked predictions per GPU pair (JobStore::prediction_errors).
  [[nodiscard]] std::vector<PairPredictionError> prediction_errors() const;
  [[nodiscard]] std::pair<std::size_t, std::int64_t> pairable_runs() const;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
  const GpuCatalog& catalog_;
  std::string catalog_version_;
  mutable std::mutex mu_;  // one connection, used from every server thread
  JobStore store_;
  // calibration_for's inputs under mu_: per job key its latest measured run per GPU and its
  // pairs' residuals under the model cached_ names; `stale` keys are recomputed on the next call.
  struct KeyRuns {
    std::map<std::string, RunRecord> latest;  // by GPU id
    std::vector<PairResidual> residuals;
    bool stale = true;
  };
  mutable std::map<std::string, KeyRuns> keys_;
  mutable const StackedModel* cached_model_ = nullptr;
  mutable std::string cached_version_;
  mutable std::pair<std::size_t, std::int64_t> cached_seen_{0, 0};  // pairable_runs() they reflect
  mutable std::size_t full_reads_ = 0;
};

// Each measured pair of the store counts this many times among the training pairs (its
// RunPair::weight, every learner's row weight): a pair of the operator's own job on the
// operator's GPUs is worth more than one of 2022's bundled runs, and 20 of them must move a fit
// of ~1,500 bundled pairs (docs/store.md, "fit --store").
inline constexpr int kStorePairWeight = 3;

struct StoreTraining {
  std::size_t pairs = 0;                 // measured pairs added (before the weight)
  std::vector<std::int64_t> rows;        // store row ids used
  std::vector<std::string> refused;      // reasons
  // Directed pairs of GPU pairs the training data already holds (kHeldGpuPairMinPairs): left to
  // the calibration, not added; the note names them.
  std::size_t calibration_only = 0;
  std::string calibration_only_note;
};

// Adds the accepted measured pairs of the store at `path` (read-only) to `dataset`/`pairs`,
// each of weight kStorePairWeight, but those of GPU pairs `pairs` already holds
// kHeldGpuPairMinPairs of (they calibrate only); `checker` is the model the reused-key check predicts with.
// Names the rows in dataset.source, which the model file keeps (training.dataset).
StoreTraining add_store_training(const std::string& path, const StackedModel& checker, const GpuCatalog& catalog,
                                 Dataset& dataset, std::vector<RunPair>& pairs);

// The stacked model as the reused-key check's predictor (pairs.hpp).
[[nodiscard]] EpochPredictor model_epoch_predictor(const StackedModel& model, const GpuCatalog& catalog);

}  // namespace epochcast
