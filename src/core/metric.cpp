#include "epochcast/core/metric.hpp"

#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "epochcast/core/error.hpp"

namespace epochcast {
namespace {

using M = Metric;
// Physical limits (canonical units) of a reading: outside them a value is impossible (util 250 %,
// negative power) and readers store it as missing. Generous on purpose: power above TDP during
// boosts, 100+ °C, GDDR7 memory clocks, 288 GB cards and hosts with terabytes of memory pass.
constexpr double kMiBCap = 1 << 30;  // 1 PiB in MiB
constexpr double kInf = std::numeric_limits<double>::infinity();
// clang-format off
constexpr std::array<MetricInfo, kMetricCount> kTable{{
  // id                   tag                       unit     nvidia-smi field               dmon     dcgm  exporter name                           dataset prefix                host   epochs limits
  {M::kGpuUtil,           "gpu_util_pct",           "%",     "utilization.gpu",             "GPUTL", 203,  "DCGM_FI_DEV_GPU_UTIL",                 "utilization_gpu",            false, true,  0, 100},
  {M::kMemUtil,           "mem_util_pct",           "%",     "utilization.memory",          "MCUTL", 204,  "DCGM_FI_DEV_MEM_COPY_UTIL",            "utilization_memory",         false, true,  0, 100},
  {M::kPower,             "power_w",                "W",     "power.draw",                  "POWER", 155,  "DCGM_FI_DEV_POWER_USAGE",              "power_drawW",                false, true,  0, 5e3},
  {M::kSmClock,           "sm_clock_mhz",           "MHz",   "clocks.current.sm",           "SMCLK", 100,  "DCGM_FI_DEV_SM_CLOCK",                 "clocks_current_smMHz",       false, true,  0, 1e5},
  {M::kGraphicsClock,     "graphics_clock_mhz",     "MHz",   "clocks.current.graphics",     "",      0,    "",                                     "clocks_current_graphicsMHz", false, false, 0, 1e5},
  {M::kMemClock,          "mem_clock_mhz",          "MHz",   "clocks.current.memory",       "MMCLK", 101,  "DCGM_FI_DEV_MEM_CLOCK",                "clocks_current_memoryMHz",   false, true,  0, 1e5},
  {M::kMemUsed,           "mem_used_mib",           "MiB",   "memory.used",                 "FBUSD", 252,  "DCGM_FI_DEV_FB_USED",                  "memory_usedMiB",             false, true,  0, kMiBCap},
  {M::kMemFree,           "mem_free_mib",           "MiB",   "memory.free",                 "FBFRE", 251,  "DCGM_FI_DEV_FB_FREE",                  "memory_freeMiB",             false, false, 0, kMiBCap},
  {M::kMemTotal,          "mem_total_mib",          "MiB",   "memory.total",                "FBTTL", 250,  "DCGM_FI_DEV_FB_TOTAL",                 "memory_totalMiB",            false, false, 0, kMiBCap},
  {M::kTemperature,       "temperature_c",          "C",     "temperature.gpu",             "TMPTR", 150,  "DCGM_FI_DEV_GPU_TEMP",                 "temperature_gpu",            false, false, 0, 250},
  {M::kEnergy,            "energy_mj",              "mJ",    "",                            "TOTEC", 156,  "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "",                           false, false, 0, kInf},
  {M::kClockEventReasons, "clock_event_reasons",    "",      "clocks_event_reasons.active", "",      112,  "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",   "",                           false, false, 0, 0x1p64},
  {M::kPstate,            "pstate",                 "",      "pstate",                      "",      190,  "DCGM_FI_DEV_PSTATE",                   "",                           false, false, 0, 32},
  {M::kPcieLinkGen,       "pcie_link_gen",          "",      "pcie.link.gen.current",       "",      235,  "DCGM_FI_DEV_PCIE_LINK_GEN",            "",                           false, false, 0, 32},
  {M::kPcieTx,            "pcie_tx_bps",            "B/s",   "",                            "PCITX", 1009, "DCGM_FI_PROF_PCIE_TX_BYTES",           "",                           false, true,  0, 1e13},
  {M::kPcieRx,            "pcie_rx_bps",            "B/s",   "",                            "PCIRX", 1010, "DCGM_FI_PROF_PCIE_RX_BYTES",           "",                           false, true,  0, 1e13},
  {M::kGrEngineActive,    "gr_engine_active_ratio", "ratio", "",                            "GRACT", 1001, "DCGM_FI_PROF_GR_ENGINE_ACTIVE",        "",                           false, true,  0, 1},
  {M::kSmActive,          "sm_active_ratio",        "ratio", "",                            "SMACT", 1002, "DCGM_FI_PROF_SM_ACTIVE",               "",                           false, true,  0, 1},
  {M::kSmOccupancy,       "sm_occupancy_ratio",     "ratio", "",                            "SMOCC", 1003, "DCGM_FI_PROF_SM_OCCUPANCY",            "",                           false, true,  0, 1},
  {M::kTensorActive,      "tensor_active_ratio",    "ratio", "",                            "TENSO", 1004, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",      "",                           false, true,  0, 1},
  {M::kDramActive,        "dram_active_ratio",      "ratio", "",                            "DRAMA", 1005, "DCGM_FI_PROF_DRAM_ACTIVE",             "",                           false, true,  0, 1},
  {M::kHostCpuUtil,       "host_cpu_util_pct",      "%",     "",                            "",      0,    "",                                     "",                           true,  true,  0, 100},
  {M::kHostMemUsed,       "host_mem_used_mib",      "MiB",   "",                            "",      0,    "",                                     "",                           true,  true,  0, kMiBCap},
  {M::kMemTemperature,    "mem_temperature_c",      "C",     "temperature.memory",          "",      140,  "DCGM_FI_DEV_MEMORY_TEMP",              "",                           false, false, 0, 250},
  {M::kPowerLimit,        "power_limit_w",          "W",     "enforced.power.limit",        "",      164,  "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",     "",                           false, false, 0, 5e3},
}};
// clang-format on

constexpr bool table_in_enum_order() {
  for (std::size_t i = 0; i < kTable.size(); ++i)
    if (static_cast<std::size_t>(kTable[i].id) != i) return false;
  return true;
}
static_assert(table_in_enum_order(), "metric table rows must follow the Metric enum");

template <typename Pred>
std::optional<Metric> find_if(Pred pred) {
  for (const auto& row : kTable)
    if (pred(row)) return row.id;
  return std::nullopt;
}

}  // namespace

std::span<const MetricInfo> metric_table() { return kTable; }

const MetricInfo& info(Metric m) {
  const auto i = static_cast<std::size_t>(m);
  if (i >= kTable.size()) throw Error(ErrorCode::kInternal, "metric id out of range");
  return kTable[i];
}

bool plausible(Metric m, double v) {
  if (std::isnan(v)) return true;  // missing, not impossible
  const MetricInfo& row = info(m);
  return v >= row.min_value && v <= row.max_value;
}

std::string describe_limits(Metric m) {
  const MetricInfo& row = info(m);
  const std::string unit = row.unit.empty() ? "" : " " + std::string(row.unit);
  if (std::isinf(row.max_value)) return fmt::format("below {:g}{}", row.min_value, unit);
  return fmt::format("outside {:g} to {:g}{}", row.min_value, row.max_value, unit);
}

std::optional<Metric> metric_by_tag(std::string_view tag) {
  if (tag.empty()) return std::nullopt;
  return find_if([&](const MetricInfo& r) { return r.tag == tag; });
}
std::optional<Metric> metric_by_smi_name(std::string_view name) {
  if (name.empty()) return std::nullopt;
  // nvidia-smi accepts the older spelling "clocks_throttle_reasons.active" too.
  if (name == "clocks_throttle_reasons.active") return Metric::kClockEventReasons;
  // Newer drivers (535+) split power.draw into .instant (one reading) and .average (1 s mean);
  // nvidia-smi accepts the short clock names (`--help-query-gpu`) and power.limit for the cap.
  if (name == "power.draw.instant" || name == "power.draw.average") return Metric::kPower;
  if (name == "clocks.sm") return Metric::kSmClock;
  if (name == "clocks.mem") return Metric::kMemClock;
  if (name == "clocks.gr") return Metric::kGraphicsClock;
  if (name == "power.limit") return Metric::kPowerLimit;
  return find_if([&](const MetricInfo& r) { return r.smi_name == name; });
}
std::optional<Metric> metric_by_dmon_name(std::string_view name) {
  if (name.empty()) return std::nullopt;
  return find_if([&](const MetricInfo& r) { return r.dmon_name == name; });
}
std::optional<Metric> metric_by_dcgm_name(std::string_view name) {
  if (name.empty()) return std::nullopt;
  return find_if([&](const MetricInfo& r) { return r.dcgm_name == name; });
}
std::optional<Metric> metric_by_dcgm_field_id(int id) {
  if (id <= 0) return std::nullopt;
  return find_if([&](const MetricInfo& r) { return r.dcgm_field_id == id; });
}

namespace {

struct Alias {
  std::string_view name;
  Metric metric;
  double factor;
};

std::optional<SourceMetric> find_alias(std::span<const Alias> aliases, std::string_view name) {
  for (const Alias& a : aliases)
    if (a.name == name) return SourceMetric{a.metric, a.factor};
  return std::nullopt;
}

// nvidia-smi dmon (`nvidia-smi dmon --help`): -s p power/temperature, u utilisation, c clocks
// (pclk: the processor, i.e. graphics clock), m frame buffer (MB = MiB), t PCIe throughput (MB/s).
constexpr Alias kSmiDmon[] = {
    {"pwr", M::kPower, 1},           {"gtemp", M::kTemperature, 1}, {"mtemp", M::kMemTemperature, 1},
    {"sm", M::kGpuUtil, 1},          {"mem", M::kMemUtil, 1},       {"mclk", M::kMemClock, 1},
    {"pclk", M::kGraphicsClock, 1},  {"fb", M::kMemUsed, 1},        {"rxpci", M::kPcieRx, 1e6},
    {"txpci", M::kPcieTx, 1e6},
};
// wandb/sdk/internal/system/assets/gpu.py: per-GPU keys under system.gpu.N.
constexpr Alias kWandbGpu[] = {
    {"gpu", M::kGpuUtil, 1},          {"memory", M::kMemUtil, 1},
    {"temp", M::kTemperature, 1},     {"powerWatts", M::kPower, 1},
    {"smClock", M::kSmClock, 1},      {"memoryClock", M::kMemClock, 1},
    {"graphicsClock", M::kGraphicsClock, 1},
    {"memoryAllocatedBytes", M::kMemUsed, 1.0 / 1048576},
    {"enforcedPowerLimitWatts", M::kPowerLimit, 1},
};
// mlflow/system_metrics/metrics/gpu_monitor.py: system/gpu_N_<key>; megabytes are 1e6 bytes.
constexpr Alias kMlflowGpu[] = {
    {"utilization_percentage", M::kGpuUtil, 1},
    {"power_usage_watts", M::kPower, 1},
    {"memory_usage_megabytes", M::kMemUsed, 1e6 / 1048576},
};
constexpr Alias kTrackerHost[] = {
    {"system.cpu", M::kHostCpuUtil, 1},
    {"system/cpu", M::kHostCpuUtil, 1},
    {"system/cpu_utilization_percentage", M::kHostCpuUtil, 1},
    {"system/system_memory_usage_megabytes", M::kHostMemUsed, 1e6 / 1048576},
};

}  // namespace

std::optional<SourceMetric> metric_by_smi_dmon_name(std::string_view n) { return find_alias(kSmiDmon, n); }
std::optional<SourceMetric> metric_by_wandb_gpu_key(std::string_view n) { return find_alias(kWandbGpu, n); }
std::optional<SourceMetric> metric_by_mlflow_gpu_key(std::string_view n) { return find_alias(kMlflowGpu, n); }
std::optional<SourceMetric> metric_by_tracker_host_key(std::string_view n) { return find_alias(kTrackerHost, n); }

}  // namespace epochcast
