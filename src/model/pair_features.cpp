#include "pair_features.hpp"

#include <cmath>
#include <algorithm>
#include <cstdlib>
#include <limits>

namespace epochcast {
namespace {

struct SpecField {
  const char* name;
  double (*get)(const GpuSpec&);
};
double fp32(const GpuSpec& g) { return g.fp32_tflops; }
// The FP16 matrix rate: the tensor cores', else (P100, no tensor cores: 0 in the catalog) the
// FP32 units', a lower bound of what FP16 matrix code gets there. Feature name kept for the schema.
double fp16_matrix(const GpuSpec& g) { return g.tensor_fp16_tflops > 0 ? g.tensor_fp16_tflops : g.fp32_tflops; }
double bandwidth(const GpuSpec& g) { return g.memory_bandwidth_gbs; }
double sms(const GpuSpec& g) { return g.sm_count; }
double max_clock(const GpuSpec& g) { return g.max_sm_clock_mhz; }
double l2(const GpuSpec& g) { return g.l2_cache_mib; }
double memory(const GpuSpec& g) { return g.memory_gib; }
double tdp(const GpuSpec& g) { return g.tdp_w; }
constexpr SpecField kSpecs[] = {
    {"fp32_tflops", fp32},       {"tensor_fp16_tflops", fp16_matrix}, {"memory_bandwidth_gbs", bandwidth},
    {"sm_count", sms},           {"max_sm_clock_mhz", max_clock},         {"l2_cache_mib", l2},
    {"memory_gib", memory},      {"tdp_w", tdp},
};

// Amdahl-style expected log ratio: the busy share of the source epoch (utilization.gpu) scales
// with the spec ratio, the rest (input pipeline, host) does not. A strong prior for every learner.
constexpr SpecField kAmdahlSpecs[] = {
    {"fp32_tflops", fp32}, {"tensor_fp16_tflops", fp16_matrix}, {"memory_bandwidth_gbs", bandwidth},
    {"sm_count", sms},     {"max_sm_clock_mhz", max_clock},
};

double amdahl(double busy, double speedup) {
  return std::log(busy / speedup + (1.0 - busy));
}

double clamp01(double v) { return std::isfinite(v) ? std::min(1.0, std::max(0.0, v)) : v; }

// Graphics clock repeats the SM clock on these GPUs; the memory clock is constant per GPU.
bool is_pair_metric(Metric m) { return m != Metric::kGraphicsClock && m != Metric::kMemClock; }

bool is_memory_metric(Metric m) {
  return m == Metric::kMemUsed || m == Metric::kMemFree || m == Metric::kMemTotal;
}

PairSchema build(bool include_memory) {
  PairSchema s;
  s.include_memory = include_memory;
  const auto metrics = feature_metrics();
  for (std::size_t mi = 0; mi < metrics.size(); ++mi) {
    if (!is_pair_metric(metrics[mi])) continue;
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
  for (const auto& spec : kAmdahlSpecs) s.names.push_back(std::string("amdahl.") + spec.name);
  s.names.push_back("amdahl.fp32_and_bandwidth");
  s.names.push_back("amdahl.memory_clock_split");
  auto index = [&](std::string_view name) {
    return static_cast<std::size_t>(std::find(s.names.begin(), s.names.end(), name) - s.names.begin());
  };
  s.prior_memory_split = index("amdahl.memory_clock_split");
  s.prior_fp32_and_bandwidth = index("amdahl.fp32_and_bandwidth");
  s.ratio_fp32 = index("ratio.log_fp32_tflops");
  s.ratio_bandwidth = index("ratio.log_memory_bandwidth_gbs");
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
    const double a = spec.get(source_gpu), b = spec.get(target_gpu);
    const double la = a > 0 ? std::log(a) : kNaN, lb = b > 0 ? std::log(b) : kNaN;
    out[k++] = la;
    out[k++] = lb;
    out[k++] = lb - la;
  }
  const double busy = clamp01(source.get(Metric::kGpuUtil, Stat::kMean) / 100.0);
  const double mem_busy = clamp01(source.get(Metric::kMemUtil, Stat::kMean) / 100.0);
  auto speedup = [&](double (*get)(const GpuSpec&)) {
    const double a = get(source_gpu), b = get(target_gpu);
    return a > 0 && b > 0 ? b / a : kNaN;
  };
  for (const auto& spec : kAmdahlSpecs) out[k++] = amdahl(busy, speedup(spec.get));
  const double compute = speedup(fp32), bw_ratio = speedup(bandwidth);
  out[k++] = amdahl(busy, std::sqrt(compute * bw_ratio));
  // Memory-busy time scales with bandwidth, the remaining busy time with compute. utilization.gpu
  // counts time with any kernel running, not how full the SMs are: a mostly idle GPU runs small,
  // latency-bound kernels that gain from the clock rather than from more SMs, so the compute
  // speed-up moves from the SM clock ratio (busy → 0) to the FP32 ratio (busy → 1) geometrically.
  // Parameter-free; the prior alone 14.2 → 13.7 % MAPE on all pairs (docs/model.md).
  const double other = std::max(0.0, busy - mem_busy);
  const double clock_ratio = speedup(max_clock);
  const double busy_compute =
      std::isfinite(clock_ratio) && std::isfinite(busy) ? std::pow(compute, busy) * std::pow(clock_ratio, 1.0 - busy) : compute;
  out[k++] = std::log(mem_busy / bw_ratio + other / busy_compute + (1.0 - mem_busy - other));
  if (k != out.size()) std::abort();  // schema and values must stay in step
}

double prior_log_ratio(const PairSchema& schema, std::span<const double> x) {
  if (const double v = x[schema.prior_memory_split]; std::isfinite(v)) return v;
  if (const double v = x[schema.prior_fp32_and_bandwidth]; std::isfinite(v)) return v;
  const double all_busy = -0.5 * (x[schema.ratio_fp32] + x[schema.ratio_bandwidth]);
  return std::isfinite(all_busy) ? all_busy : 0.0;
}

}  // namespace epochcast
