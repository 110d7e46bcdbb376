// Model files (JSON from `epochcast fit -o`): load, then predict with what loaded, since a file
// that loads must be safe to use.
#include <cmath>
#include <cstdint>
#include <string>

#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/model/stacked_model.hpp"
#include "fuzz_common.hpp"

using namespace epochcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const GpuCatalog catalog = load_gpu_catalog(EPOCHCAST_DATA_DIR "/gpus.csv");
  const std::string name = "fuzz_model.json";
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  StackedModel m;
  bool ok = false;
  // JSON reports a byte offset; a parse error names line:column, a schema error the field.
  fuzz::run_checked(name, false, [&] {
    m = model_from_json(text, name);
    ok = true;
  });
  if (!ok) return 0;
  FeatureRow f;
  f.values.assign(feature_count(), 1.0);
  f.values[0] = std::nan("");
  fuzz::run_checked("", false, [&] {
    const auto& g = catalog.gpus();
    for (std::size_t i = 0; i + 1 < g.size(); i += 3) {
      const Prediction p = m.predict(f, 4.2, g[i], g[i + 1]);
      if (p.per_learner.size() != m.learner_names().size()) fuzz::finding("per-learner size", "");
    }
    (void)m.check_range(f);
  });
  return 0;
}
