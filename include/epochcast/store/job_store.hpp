// The job store: every analysed run of the fleet in one SQLite file (WAL: one writer, many
// readers), schema versioned with migrations. Runs sharing an operator-supplied job key on
// different GPU types become measured cross-GPU pairs (store/pairs.hpp). docs/store.md.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/model/stacked_model.hpp"
#include "epochcast/store/run_record.hpp"

namespace epochcast {

// The schema this code writes. A store with a newer one is refused (Error(kSchemaMismatch)
// naming both); an older one is migrated forward on the first write.
inline constexpr int kStoreSchemaVersion = 2;  // 1: runs, predictions; 2: feedback

enum class StoreMode { kReadOnly, kReadWrite };

struct RecordResult {
  std::int64_t id = 0;
  // Predictions of earlier runs of the same job key for this run's GPU, now checked.
  std::vector<FeedbackRecord> feedback;
  // False when record_once() found a run of the same trace name (id is that run's).
  bool recorded = true;
};

struct ImportResult {
  std::size_t imported = 0, skipped_known = 0;
};

class JobStore {
 public:
  // kReadWrite creates the file when missing and migrates an older schema. Throws Error(kIo)
  // for a missing file (read-only), a read-only file or folder (read-write), a lock held past
  // the busy timeout; Error(kParse) for a file that is not an SQLite database or another
  // program's database; Error(kSchemaMismatch) for a newer schema. Never changes a file it
  // refuses.
  JobStore(const std::string& path, StoreMode mode);
  ~JobStore();
  JobStore(JobStore&&) noexcept;
  JobStore& operator=(JobStore&&) noexcept;

  [[nodiscard]] const std::string& path() const;
  [[nodiscard]] int schema_version() const;

  // Stores the run (a new uid and the time when not set) with its predictions, in one
  // transaction, and the feedback it makes possible. Error(kInvalidArgument) naming the field
  // for a run without a GPU or with a negative epoch time.
  RecordResult record(RunRecord run);
  // As record(), unless a run with the same (non-empty) trace name is stored already: checked
  // and written in one transaction, so two writers cannot both record it.
  RecordResult record_once(RunRecord run);
  // Every run, oldest first; only those of `job_key` when given.
  [[nodiscard]] std::vector<RunRecord> runs(const std::optional<std::string>& job_key = std::nullopt) const;
  // The runs pairs are made of (a job key and a measured epoch time), oldest first, without
  // their predictions: what fit --store, a refit and the calibration read.
  [[nodiscard]] std::vector<RunRecord> measured_job_runs() const;
  [[nodiscard]] std::optional<RunRecord> run(std::int64_t id) const;
  [[nodiscard]] std::size_t run_count() const;
  // Runs with a job key and a measured epoch time (those pairs are made of): count, largest id.
  [[nodiscard]] std::pair<std::size_t, std::int64_t> pairable_runs() const;
  [[nodiscard]] std::vector<FeedbackRecord> feedback() const;
  // The feedback aggregated per (source GPU, target GPU), ordered by the pair; one query, so a
  // /metrics scrape does not read every row into memory.
  [[nodiscard]] std::vector<PairPredictionError> prediction_errors() const;
  // Deletes a run (or every run of a job key) with its predictions and feedback; the count.
  std::size_t forget_run(std::int64_t id);
  std::size_t forget_job(const std::string& job_key);

  // One JSON object per line per run (run_json.hpp); import skips runs whose uid is known.
  void export_jsonl(std::ostream& out) const;
  ImportResult import_jsonl(std::istream& in, const std::string& name);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// "fnv1a64:…" over every GPU's id and figures: which catalog named a run's GPU.
[[nodiscard]] std::string catalog_version(const GpuCatalog& catalog);
// "v5/<schema hash>/<data fingerprint>": which model predicted.
[[nodiscard]] std::string model_version(const StackedModel& model);
// $EPOCHCAST_STORE, else "" (the front ends then need --store).
[[nodiscard]] std::string default_store_path();

}  // namespace epochcast
