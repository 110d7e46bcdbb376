// The public dataset (data/nvidiasmi_devicequery_all.csv, schema in docs/dataset.md): one row
// per training run of a workload on one GPU type. Workload identity (model, batch size,
// image size) forms pairs and evaluation groups only; it is never a feature.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "epochcast/features/feature_row.hpp"
#include "epochcast/model/gpu_catalog.hpp"

namespace epochcast {

struct DatasetRow {
  std::uint64_t line = 0;      // 1-based line in the source file
  std::string gpu_id;          // catalog id ("t4"), from `Instances` (or `name`)
  std::string model;           // CNN model: workload identity and the lomo group
  int batch_size = 0;
  int image_size = 0;          // `datasize`: image side in pixels
  std::string workload;        // "model/batchsize/datasize": pairs and kfold groups
  double epoch_s = 0;          // label: `one_epoch_average_second`
  FeatureRow features;         // the run's nvidia-smi statistics
};

struct DatasetDiagnostics {
  struct Skip {
    std::uint64_t line;
    std::string reason;
  };
  std::uint64_t rows_read = 0;      // rows kept
  std::uint64_t rows_skipped = 0;   // rows dropped; the first few reasons in `skips`
  std::uint64_t duplicates = 0;     // rows repeating an earlier (GPU, workload): first kept
  std::uint64_t nan_labels = 0;     // rows without a usable label
  std::uint64_t impossible_values = 0;  // statistics outside the metric's physical limits: read as NaN
  std::string first_impossible;         // "line 6, field 'utilization_gpu_mean': '250' (outside 0 to 100 %)"
  std::vector<Skip> skips;          // capped at kMaxSkipsListed
  std::vector<std::string> missing_columns;  // feature columns absent: those features are NaN
  static constexpr std::size_t kMaxSkipsListed = 20;
};

struct Dataset {
  std::string source;
  std::vector<DatasetRow> rows;
  DatasetDiagnostics diagnostics;

  [[nodiscard]] std::vector<std::string> gpu_ids() const;  // distinct, in catalog order
  [[nodiscard]] std::vector<std::string> models() const;   // distinct, sorted
};

struct DatasetOptions {
  // Skip (and count) rows with malformed cells instead of failing on the first.
  bool lenient = false;
};

// Throws Error(kIo) when unreadable; Error(kParse) naming file, line, column and field for a
// missing identity/label column, a malformed cell (unless lenient), an unknown GPU label.
// Rows with a NaN or non-positive label and duplicate rows are skipped and counted.
[[nodiscard]] Dataset load_dataset(const std::string& path, const GpuCatalog& catalog,
                                   const DatasetOptions& options = {});
[[nodiscard]] Dataset load_dataset(std::istream& in, const std::string& name,
                                   const GpuCatalog& catalog, const DatasetOptions& options = {});
// $EPOCHCAST_DATA_DIR/nvidiasmi_devicequery_all.csv if set, else the bundled copy.
[[nodiscard]] std::string default_dataset_path();

// A training pair: the same workload run on two different GPU types.
struct RunPair {
  std::size_t source;  // index into Dataset::rows
  std::size_t target;
  // How many times the pair counts in the fit (every learner takes it as a row weight, > 0):
  // a weight of w fits as w copies of the pair would (tests Learners.RowWeight*).
  double weight = 1.0;
};
// Every ordered pair (source GPU != target GPU) of rows sharing a workload, in row order.
[[nodiscard]] std::vector<RunPair> make_pairs(const Dataset& dataset);

}  // namespace epochcast
