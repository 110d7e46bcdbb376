// How far a pair lies outside the training GPUs, and how much of the learned correction it keeps.
#include "epochcast/model/stacked_model.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "stacked_internal.hpp"

namespace epochcast {

namespace stacked {

// The figures correction_shrink compares with the training GPUs' range: the two a job's time
// meets, the compute peak of its precision (compute_path: TF32 tensor for fp32 code where the GPU
// has it) and the memory bandwidth. The training range is taken at kAuto, the bundled jobs' fp32
// code; a fp16 job on a GPU of the range meets another peak and so counts as outside it.
std::vector<double> shrink_specs(const GpuSpec& g, Precision precision) {
  return {std::log(compute_path(precision, g).tflops), std::log(g.memory_bandwidth_gbs)};
}

// Log excess of a pair's figures over the range [lo, hi] (0 inside).
double spec_excess(const std::vector<double>& lo, const std::vector<double>& hi, const GpuSpec& source,
                   const GpuSpec& target, Precision precision) {
  double excess = 0;
  for (const GpuSpec* g : {&source, &target}) {
    const std::vector<double> v = shrink_specs(*g, precision);
    for (std::size_t k = 0; k < v.size() && k < lo.size(); ++k) excess = std::max({excess, lo[k] - v[k], v[k] - hi[k]});
  }
  return excess;
}

// The correction kept at a log excess: all of it up to the excess the GPU-held-out folds
// validated, then less by 1 / span per log unit beyond (0: prior alone).
double shrink_at(double excess, double trusted_log, double span_log) {
  if (!(span_log > 0)) return 1.0;
  return std::clamp(1.0 - std::max(0.0, excess - trusted_log) / span_log, 0.0, 1.0);
}

// The range of shrink_specs over the GPUs of some training rows.
void spec_range(const GpuCatalog& catalog, const std::set<std::string>& ids, std::vector<double>& lo,
                std::vector<double>& hi) {
  lo.clear(), hi.clear();
  for (const std::string& id : ids) {
    const std::vector<double> v = shrink_specs(*catalog.find(id), Precision::kAuto);
    if (lo.empty()) lo = hi = v;
    for (std::size_t k = 0; k < v.size(); ++k) lo[k] = std::min(lo[k], v[k]), hi[k] = std::max(hi[k], v[k]);
  }
}

}  // namespace stacked

}  // namespace epochcast
