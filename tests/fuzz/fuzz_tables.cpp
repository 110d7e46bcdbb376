// The CSV tables: the dataset (data/nvidiasmi_devicequery_all.csv format), the GPU catalog
// (data/gpus.csv) and the price catalog (data/prices.csv). First byte: which table (0-2) and
// lenient (bit 2) for the dataset.
#include <cstdint>
#include <sstream>
#include <string>

#include "epochcast/model/dataset.hpp"
#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/service/prices.hpp"
#include "fuzz_common.hpp"

using namespace epochcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  static const GpuCatalog catalog = load_gpu_catalog(EPOCHCAST_DATA_DIR "/gpus.csv");
  const std::uint8_t sel = data[0];
  const std::string content(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (sel % 3) {
    case 0: {
      const std::string name = "fuzz_dataset.csv";
      fuzz::run_checked(name, true, [&] {
        std::istringstream in(content);
        DatasetOptions o;
        o.lenient = sel & 4;
        const Dataset d = load_dataset(in, name, catalog, o);
        for (const RunPair& p : make_pairs(d))
          if (p.source >= d.rows.size() || p.target >= d.rows.size()) fuzz::finding("pair index", name);
        for (const DatasetRow& r : d.rows)
          if (r.features.values.size() != feature_count()) fuzz::finding("feature row size", name);
      });
      break;
    }
    case 1: {
      const std::string name = "fuzz_gpus.csv";
      fuzz::run_checked(name, true, [&] {
        const GpuCatalog c = load_gpu_catalog_from_string(content, name);
        for (const char* n : {"Tesla T4", "NVIDIA H200", "", "t4"}) (void)c.match_smi_name(n);
        (void)c.ids_joined();
      });
      break;
    }
    case 2: {
      const std::string name = "fuzz_prices.csv";
      fuzz::run_checked(name, true, [&] {
        const PriceCatalog p = parse_price_catalog(content, name);
        for (const InstancePrice& r : p.rows()) (void)p.for_gpu(r.gpu);
      });
      break;
    }
  }
  return 0;
}
