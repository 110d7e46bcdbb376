// The public throughput table (data/public-throughput/): published single-GPU training
// throughput of PyTorch workloads on several GPU types in two precisions, the ground truth the
// scaling prior is calibrated on (data/public-throughput/README.md has the citation).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/model/precision.hpp"

namespace epochcast {

struct PublicMeasurement {
  std::uint64_t line = 0;   // 1-based line in the table
  std::string gpu_id;       // catalog id
  Precision precision = Precision::kTf32;  // fp16 (amp) or tf32 (fp32 code on TF32 where present)
  std::string workload;
  double throughput = 0;    // the workload's own unit; higher is faster
};

struct PublicTable {
  std::string source;
  std::vector<PublicMeasurement> rows;
  // Rows skipped, by the name that was not in names.csv (or a GPU id the catalog lacks): counted
  // and named, not fatal.
  std::map<std::string, std::size_t> unknown_gpus, unknown_workloads, unknown_precisions;
  [[nodiscard]] std::size_t rows_skipped() const;
  // Geometric mean over replicate hosts of the same GPU type, per (gpu, precision, workload).
  [[nodiscard]] std::map<std::tuple<std::string, Precision, std::string>, double> mean_throughput() const;
  [[nodiscard]] std::vector<std::string> gpu_ids() const;  // distinct, sorted
};

// Reads the table and its name map (names.csv: kind,name,value). Throws Error(kIo) when
// unreadable, Error(kParse) with file, line, column and field for a missing column or a
// throughput that is not a positive number.
[[nodiscard]] PublicTable load_public_throughput(const std::string& table_path, const std::string& names_path,
                                                 const GpuCatalog& catalog);
// $EPOCHCAST_DATA_DIR/public-throughput/… if set, else the bundled copies.
[[nodiscard]] std::string default_public_throughput_path();
[[nodiscard]] std::string default_public_names_path();

}  // namespace epochcast
