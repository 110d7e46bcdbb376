#include "store_link.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "epochcast/core/error.hpp"

namespace epochcast {

EpochPredictor model_epoch_predictor(const StackedModel& model, const GpuCatalog& catalog) {
  return [&model, &catalog](const RunRecord& s, const std::string& target) {
    const GpuSpec* sg = catalog.find(s.gpu);
    const GpuSpec* tg = catalog.find(target);
    if (!sg || !tg || !(s.epoch_s > 0)) return 0.0;
    return model.predict(s.features, s.epoch_s, *sg, *tg).epoch_s;
  };
}

StoreLink::StoreLink(const std::string& path, const GpuCatalog& catalog)
    : path_(path), catalog_(catalog), catalog_version_(catalog_version(catalog)), store_(path, StoreMode::kReadWrite) {}

Calibration StoreLink::calibration_for(const StackedModel& model) const {
  std::lock_guard lock(mu_);
  const std::string version = model_version(model);
  // The store's state before any read: a run another process writes during the read below
  // makes the next call's count differ, and so read again, rather than go unseen.
  const std::pair<std::size_t, std::int64_t> seen = store_.pairable_runs();
  if (&model != cached_model_ || version != cached_version_ || seen != cached_seen_) {
    keys_.clear();
    ++full_reads_;
    for (RunRecord& r : store_.measured_job_runs()) {  // oldest first: the last per GPU stays
      KeyRuns& k = keys_[r.job_key];
      k.latest[r.gpu] = std::move(r);
    }
    cached_model_ = &model;
    cached_version_ = version;
    cached_seen_ = seen;
  }
  // Per key as measured_pairs() and pair_residuals() over every run would make them, and
  // concatenated in key order: the same residuals in the same order, so the same calibration.
  const EpochPredictor predict = model_epoch_predictor(model, catalog_);
  std::vector<PairResidual> all;
  std::vector<RunRecord> runs;
  for (auto& [key, k] : keys_) {
    if (k.stale) {
      runs.clear();
      for (const auto& [gpu, r] : k.latest) runs.push_back(r);
      k.residuals = pair_residuals(measured_pairs(runs, predict), runs, model, catalog_);
      k.stale = false;
    }
    all.insert(all.end(), k.residuals.begin(), k.residuals.end());
  }
  return fit_calibration(all);
}

std::size_t StoreLink::full_reads() const {
  std::lock_guard lock(mu_);
  return full_reads_;
}

void StoreLink::invalidate() const {
  std::lock_guard lock(mu_);
  cached_model_ = nullptr;
  keys_.clear();
}

std::pair<std::size_t, std::int64_t> StoreLink::pairable_runs() const {
  std::lock_guard lock(mu_);
  return store_.pairable_runs();
}

std::vector<PairPredictionError> StoreLink::prediction_errors() const {
  std::lock_guard lock(mu_);
  return store_.prediction_errors();
}

bool StoreLink::record(PredictReport& report, const FeatureRow& features, const std::string& model_version,
                       bool once) {
  RunRecord run;
  run.job_key = report.job_key;
  run.gpu = report.source.gpu;
  run.catalog_version = catalog_version_;
  run.trace = report.source.trace;
  const Segmentation& seg = report.source.detected;
  run.detected = seg.found;
  run.period_s = seg.found ? seg.period_s : 0;
  run.confidence = seg.confidence;
  run.epochs_found = static_cast<int>(seg.epochs.size());
  run.detect_reason = seg.reason;
  run.epoch_s = report.source.measured_epoch_s;
  run.epoch_time_from = report.source.epoch_time_from;
  run.features = features;
  run.model_version = model_version;
  for (const auto& p : report.predictions)
    if (!p.measured)
      run.predictions.push_back({p.gpu, p.epoch_s, p.interval_lo_s, p.interval_hi_s, p.store_calibration_log});
  std::lock_guard lock(mu_);
  // A run pairs are made of updates the calibration's cache (its key only), unless the cache
  // is behind the store already (then the next calibration_for reads it whole anyway).
  const bool pairable = !run.job_key.empty() && run.epoch_s > 0;
  std::optional<RunRecord> kept;
  if (pairable && cached_model_) kept = run;
  RecordResult result;
  try {
    result = once ? store_.record_once(std::move(run)) : store_.record(std::move(run));
  } catch (const Error& e) {
    // The prediction stands; the store is as it was (one transaction) and says why.
    if (e.code() != ErrorCode::kIo && e.code() != ErrorCode::kParse) throw;
    report.warnings.push_back(fmt::format("run not recorded in the job store: {}", e.what()));
    return false;
  }
  report.store_run_id = result.id;
  if (!result.recorded) return false;
  if (kept) {
    kept->id = result.id;
    KeyRuns& k = keys_[kept->job_key];
    const std::string gpu = kept->gpu;
    k.latest[gpu] = std::move(*kept);
    k.stale = true;
    ++cached_seen_.first;
    cached_seen_.second = std::max(cached_seen_.second, result.id);
  }
  for (const auto& f : result.feedback)
    report.warnings.push_back(fmt::format(
        "job '{}': run {} on {} had predicted {:.4g} s/epoch here; measured {:.4g} s ({:+.1f} %), recorded in {}",
        f.job_key, f.predicted_by, f.source_gpu, f.predicted_s, f.measured_s,
        (f.predicted_s / f.measured_s - 1) * 100, path_));
  return !report.job_key.empty() && report.source.measured_epoch_s > 0;
}

StoreTraining add_store_training(const std::string& path, const StackedModel& checker, const GpuCatalog& catalog,
                                 Dataset& dataset, std::vector<RunPair>& pairs) {
  const JobStore store(path, StoreMode::kReadOnly);
  const std::vector<RunRecord> runs = store.measured_job_runs();
  const PairSet set = measured_pairs(runs, model_epoch_predictor(checker, catalog));
  StoreTraining out;
  for (const auto& r : set.refused) out.refused.push_back(r.reason);
  for (const auto& p : set.pairs)
    if (!catalog.find(p.source_gpu) || !catalog.find(p.target_gpu))
      throw Error(ErrorCode::kNotFound, fmt::format("store '{}': run {} names GPU '{}', which the catalog lacks", path,
                                                    p.source_run, catalog.find(p.source_gpu) ? p.target_gpu : p.source_gpu));
  const HeldSplit split = split_held_pairs(set, held_gpu_pairs(dataset, pairs));
  out.rows = append_store_pairs(runs, split.train, kStorePairWeight, dataset, pairs);
  out.pairs = split.train.pairs.size();
  std::vector<std::string> held;
  for (const auto& [k, n] : split.calibration_only) {
    out.calibration_only += n;
    held.push_back(fmt::format("{}->{} {}", k.first, k.second, n));
  }
  if (out.calibration_only)
    out.calibration_only_note = fmt::format(
        "{} measured pair(s) of GPU pairs the training data already holds {} or more pairs of ({}) calibrate the "
        "predictions and are not refitted (a refit with them was up to 5.3 % worse on such pairs: docs/store.md)",
        out.calibration_only, kHeldGpuPairMinPairs, fmt::join(held, ", "));
  if (!out.rows.empty())
    dataset.source += fmt::format(" + store {} runs {} ({} measured pairs x{})", path, compress_ids(out.rows), out.pairs,
                                  kStorePairWeight);
  return out;
}

}  // namespace epochcast
