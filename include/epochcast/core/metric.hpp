// The one metric table: every channel epochcast knows, its canonical tag and unit, and its
// name in every source. Readers and writers look names up here; nothing else spells them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace epochcast {

enum class Metric : std::uint8_t {
  kGpuUtil,          // utilization.gpu: % of time a kernel ran
  kMemUtil,          // utilization.memory: % of time device memory was read/written
  kPower,            // power.draw
  kSmClock,          // clocks.current.sm
  kGraphicsClock,    // clocks.current.graphics
  kMemClock,         // clocks.current.memory
  kMemUsed,          // memory.used
  kMemFree,          // memory.free
  kMemTotal,         // memory.total
  kTemperature,      // temperature.gpu
  kEnergy,           // total energy since driver load
  kClockEventReasons,// clocks_event_reasons.active bitmask
  kPstate,           // performance state, P0 = 0
  kPcieLinkGen,      // pcie.link.gen.current
  kPcieTx,           // PCIe transmit throughput
  kPcieRx,           // PCIe receive throughput
  kGrEngineActive,   // DCGM profiling: graphics engine active ratio
  kSmActive,         // DCGM profiling: SM active ratio
  kSmOccupancy,      // DCGM profiling: SM occupancy ratio
  kTensorActive,     // DCGM profiling: tensor pipe active ratio
  kDramActive,       // DCGM profiling: DRAM active ratio
  kHostCpuUtil,      // host: total CPU utilisation over all cores
  kHostMemUsed,      // host: used memory
  kMemTemperature,   // temperature.memory: HBM temperature
  kPowerLimit,       // enforced.power.limit: the power cap in force
};

inline constexpr std::size_t kMetricCount = 25;

struct MetricInfo {
  Metric id;
  std::string_view tag;          // canonical CSV column, unit in the name: "gpu_util_pct"
  std::string_view unit;         // canonical unit: "%", "W", "MHz", "MiB", "C", "mJ", "B/s", "ratio", ""
  std::string_view smi_name;     // nvidia-smi --query-gpu field, "" if none
  std::string_view dmon_name;    // dcgmi dmon short column name, "" if none
  int dcgm_field_id;             // DCGM field id, 0 if none
  std::string_view dcgm_name;    // dcgm-exporter / Prometheus metric name, "" if none
  std::string_view dataset_name; // column prefix in the public dataset ("power_drawW"), "" if none
  bool host;                     // a host (not GPU) metric
  // Whether epoch detection may vote on it: it rises and falls with the work of each step
  // (utilisation, power, clocks, memory in use, PCIe, DCGM activity, host CPU and memory), not
  // a setting or a slow drift (graphics clock, free/total memory, temperature, energy, p-state).
  bool may_carry_epochs;
  double min_value;              // physical limits of a reading, canonical unit: outside them
  double max_value;              //   it is impossible (util 250 %, negative power)
};

// All rows, in enum order.
[[nodiscard]] std::span<const MetricInfo> metric_table();
[[nodiscard]] const MetricInfo& info(Metric m);

// False when `v` (canonical unit) lies outside the metric's physical limits; NaN (missing) is
// not impossible. Every reader stores an impossible reading as missing, counted and warned.
[[nodiscard]] bool plausible(Metric m, double v);
// "outside 0 to 100 %", "below 0 mJ": the limits, for messages.
[[nodiscard]] std::string describe_limits(Metric m);

// Lookups by each source's name; nullopt when the name is not ours.
[[nodiscard]] std::optional<Metric> metric_by_tag(std::string_view tag);
[[nodiscard]] std::optional<Metric> metric_by_smi_name(std::string_view smi_field);
[[nodiscard]] std::optional<Metric> metric_by_dmon_name(std::string_view short_name);
[[nodiscard]] std::optional<Metric> metric_by_dcgm_name(std::string_view exporter_name);
[[nodiscard]] std::optional<Metric> metric_by_dcgm_field_id(int field_id);

// Names in sources that have no column of their own in the table, with the factor from the
// source's unit to the canonical one.
struct SourceMetric {
  Metric metric;
  double factor = 1;  // source unit -> canonical unit
};
// nvidia-smi dmon columns (-s pucmt): pwr, gtemp, mtemp, sm, mem, mclk, pclk, fb, rxpci, txpci.
[[nodiscard]] std::optional<SourceMetric> metric_by_smi_dmon_name(std::string_view column);
// Weights & Biases system metrics, the key after "system.gpu.N." (gpu, memory, temp, powerWatts, …).
[[nodiscard]] std::optional<SourceMetric> metric_by_wandb_gpu_key(std::string_view key);
// MLflow system metrics, the key after "system/gpu_N_" (utilization_percentage, power_usage_watts, …).
[[nodiscard]] std::optional<SourceMetric> metric_by_mlflow_gpu_key(std::string_view key);
// W&B ("system.cpu") and MLflow ("system/cpu_utilization_percentage") host keys, prefix included.
[[nodiscard]] std::optional<SourceMetric> metric_by_tracker_host_key(std::string_view key);

}  // namespace epochcast
