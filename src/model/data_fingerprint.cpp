// The fingerprint of the data a model is fitted on (stacked_model.hpp, docs/model.md "Model file").
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "epochcast/core/error.hpp"
#include "epochcast/model/stacked_model.hpp"

namespace epochcast {
namespace {

// FNV-1a, 64 bits: the fingerprint tells data apart that differs by accident (an edited cell, a
// row more or less, another catalog); it is not meant to resist a forger.
class Fnv64 {
 public:
  void bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) {
      h_ ^= b[i];
      h_ *= 1099511628211ULL;
    }
  }
  void text(std::string_view s) {
    const std::uint64_t n = s.size();  // length first: "ab"+"c" differs from "a"+"bc"
    bytes(&n, sizeof n);
    bytes(s.data(), s.size());
  }
  void number(double v) {
    // One NaN and one zero: a value's meaning, not its bit pattern, is what the fit sees.
    if (std::isnan(v)) v = std::numeric_limits<double>::quiet_NaN();
    if (v == 0) v = 0;
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    bytes(&bits, sizeof bits);
  }
  [[nodiscard]] std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_ = 1469598103934665603ULL;
};

void spec(Fnv64& h, const GpuSpec& g) {
  h.text(g.id);
  h.text(g.architecture);
  h.text(g.memory_type);
  for (double v : {g.compute_capability, g.sm_count, g.fp32_cores_per_sm, g.max_sm_clock_mhz, g.fp32_tflops,
                   g.tensor_fp16_tflops, g.tensor_tf32_tflops, g.tensor_bf16_tflops, g.tensor_fp8_tflops,
                   g.memory_gib, g.memory_bandwidth_gbs, g.l2_cache_mib, g.tdp_w})
    h.number(v);
}

void row(Fnv64& h, const DatasetRow& r) {
  h.text(r.gpu_id);
  h.text(r.model);
  h.text(r.workload);
  h.number(r.epoch_s);
  const std::uint64_t n = r.features.values.size();
  h.bytes(&n, sizeof n);
  for (double v : r.features.values) h.number(v);
}

}  // namespace

std::string training_data_fingerprint(const Dataset& ds, const std::vector<RunPair>& pairs,
                                      const GpuCatalog& catalog) {
  // What the fit reads: each pair's two rows (statistics, epoch times, GPU, model and workload:
  // the fold groups) in pair order, and the catalog figures of every GPU the pairs name. Not
  // the file's bytes: the same numbers written another way fit the same model.
  Fnv64 h;
  h.text("epochcast-training-data-v1");
  std::set<std::string> gpus;
  const std::uint64_t n = pairs.size();
  h.bytes(&n, sizeof n);
  for (const RunPair& p : pairs) {
    const DatasetRow& s = ds.rows.at(p.source);
    const DatasetRow& t = ds.rows.at(p.target);
    row(h, s);
    row(h, t);
    if (p.weight != 1.0) {  // a weighted pair fits another model; weight 1 hashes as before weights
      h.text("weight");
      h.number(p.weight);
    }
    gpus.insert(s.gpu_id);
    gpus.insert(t.gpu_id);
  }
  for (const std::string& id : gpus) {  // sorted: catalog row order does not matter
    const GpuSpec* g = catalog.find(id);
    if (!g) throw Error(ErrorCode::kNotFound, "GPU '" + id + "' is not in the catalog");
    spec(h, *g);
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h.value()));
  return buf;
}

}  // namespace epochcast
