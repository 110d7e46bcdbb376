#include "pair_features.hpp"

#include <cmath>
#include <limits>

namespace epochcast {
namespace {

struct SpecField {
  const char* name;
  double GpuSpec::*field;
};
constexpr SpecField kSpecs[] = {
    {"fp32_tflops", &GpuSpec::fp32_tflops},
    {"tensor_fp16_tflops", &GpuSpec::tensor_fp16_tflops},
    {"memory_bandwidth_gbs", &GpuSpec::memory_bandwidth_gbs},
    {"sm_count", &GpuSpec::sm_count},
    {"max_sm_clock_mhz", &GpuSpec::max_sm_clock_mhz},
    {"l2_cache_mib", &GpuSpec::l2_cache_mib},
    {"memory_gib", &GpuSpec::memory_gib},
    {"tdp_w", &GpuSpec::tdp_w},
};

bool is_memory_metric(Metric m) {
  return m == Metric::kMemUsed || m == Metric::kMemFree || m == Metric::kMemTotal;
}

PairSchema build(bool include_memory) {
  PairSchema s;
  s.include_memory = include_memory;
  const auto metrics = feature_metrics();
  for (std::size_t mi = 0; mi < metrics.size(); ++mi) {
    if (!include_memory && is_memory_metric(metrics[mi])) continue;
    for (std::size_t st = 0; st < kStatCount; ++st) {
      const std::size_t f = mi * kStatCount + st;
      s.source_features.push_back(f);
      s.names.push_back("src." + feature_names()[f]);
    }
  }
  s.names.push_back("src.log_epoch_s");
  s.names.push_back("src.power_mean_over_tdp");
  s.names.push_back("src.sm_clock_mean_over_max");
  for (const auto& spec : kSpecs) {
    s.names.push_back(std::string("src.log_") + spec.name);
    s.names.push_back(std::string("tgt.log_") + spec.name);
    s.names.push_back(std::string("ratio.log_") + spec.name);
  }
  return s;
}

}  // namespace

const PairSchema& pair_schema(bool include_memory) {
  static const PairSchema without = build(false);
  static const PairSchema with = build(true);
  return include_memory ? with : without;
}

void pair_features(const PairSchema& schema, const FeatureRow& source, double source_epoch_s,
                   const GpuSpec& source_gpu, const GpuSpec& target_gpu, std::span<double> out) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::size_t k = 0;
  for (std::size_t f : schema.source_features) out[k++] = source.values[f];
  out[k++] = source_epoch_s > 0 ? std::log(source_epoch_s) : kNaN;
  const double power = source.get(Metric::kPower, Stat::kMean);
  const double sm = source.get(Metric::kSmClock, Stat::kMean);
  out[k++] = source_gpu.tdp_w > 0 ? power / source_gpu.tdp_w : kNaN;
  out[k++] = source_gpu.max_sm_clock_mhz > 0 ? sm / source_gpu.max_sm_clock_mhz : kNaN;
  for (const auto& spec : kSpecs) {
    const double a = source_gpu.*spec.field, b = target_gpu.*spec.field;
    const double la = a > 0 ? std::log(a) : kNaN, lb = b > 0 ? std::log(b) : kNaN;
    out[k++] = la;
    out[k++] = lb;
    out[k++] = lb - la;
  }
}

}  // namespace epochcast
