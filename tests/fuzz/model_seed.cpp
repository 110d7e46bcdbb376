// Writes a small but complete model file (few rounds and trees, part of the bundled dataset)
// as the model fuzzer's seed: same layout as `epochcast fit -o`, a few KB instead of MBs.
#include <fstream>
#include <iostream>

#include "epochcast/model/dataset.hpp"
#include "epochcast/model/stacked_model.hpp"

using namespace epochcast;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_model_seed OUT.json\n";
    return 2;
  }
  const GpuCatalog catalog = load_gpu_catalog(EPOCHCAST_DATA_DIR "/gpus.csv");
  Dataset d = load_dataset(EPOCHCAST_DATA_DIR "/nvidiasmi_devicequery_all.csv", catalog);
  Dataset small = d;
  small.rows.clear();
  for (std::size_t i = 0; i < d.rows.size(); i += 9) small.rows.push_back(d.rows[i]);
  FitOptions o;
  o.xgb_rounds = 3;
  o.xgb_max_depth = 2;
  o.trees = 2;
  o.folds = 3;
  o.knn_k = 3;
  std::ofstream(argv[1]) << model_to_json(fit_model(small, catalog, o));
  return 0;
}
