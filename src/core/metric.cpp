#include "epochcast/core/metric.hpp"

#include <array>

#include "epochcast/core/error.hpp"

namespace epochcast {
namespace {

using M = Metric;
// clang-format off
constexpr std::array<MetricInfo, kMetricCount> kTable{{
  // id                  tag                       unit     nvidia-smi field                 dmon     dcgm  exporter name                           NVML call                                  dataset prefix               host
  {M::kGpuUtil,          "gpu_util_pct",          "%",     "utilization.gpu",               "GPUTL", 203,  "DCGM_FI_DEV_GPU_UTIL",                  "nvmlDeviceGetUtilizationRates",           "utilization_gpu",           false},
  {M::kMemUtil,          "mem_util_pct",          "%",     "utilization.memory",            "MCUTL", 204,  "DCGM_FI_DEV_MEM_COPY_UTIL",             "nvmlDeviceGetUtilizationRates",           "utilization_memory",        false},
  {M::kPower,            "power_w",               "W",     "power.draw",                    "POWER", 155,  "DCGM_FI_DEV_POWER_USAGE",               "nvmlDeviceGetPowerUsage",                 "power_drawW",               false},
  {M::kSmClock,          "sm_clock_mhz",          "MHz",   "clocks.current.sm",             "SMCLK", 100,  "DCGM_FI_DEV_SM_CLOCK",                  "nvmlDeviceGetClockInfo",                  "clocks_current_smMHz",      false},
  {M::kGraphicsClock,    "graphics_clock_mhz",    "MHz",   "clocks.current.graphics",       "",      0,    "",                                      "nvmlDeviceGetClockInfo",                  "clocks_current_graphicsMHz",false},
  {M::kMemClock,         "mem_clock_mhz",         "MHz",   "clocks.current.memory",         "MMCLK", 101,  "DCGM_FI_DEV_MEM_CLOCK",                 "nvmlDeviceGetClockInfo",                  "clocks_current_memoryMHz",  false},
  {M::kMemUsed,          "mem_used_mib",          "MiB",   "memory.used",                   "FBUSD", 252,  "DCGM_FI_DEV_FB_USED",                   "nvmlDeviceGetMemoryInfo",                 "memory_usedMiB",            false},
  {M::kMemFree,          "mem_free_mib",          "MiB",   "memory.free",                   "FBFRE", 251,  "DCGM_FI_DEV_FB_FREE",                   "nvmlDeviceGetMemoryInfo",                 "memory_freeMiB",            false},
  {M::kMemTotal,         "mem_total_mib",         "MiB",   "memory.total",                  "FBTTL", 250,  "DCGM_FI_DEV_FB_TOTAL",                  "nvmlDeviceGetMemoryInfo",                 "memory_totalMiB",           false},
  {M::kTemperature,      "temperature_c",         "C",     "temperature.gpu",               "TMPTR", 150,  "DCGM_FI_DEV_GPU_TEMP",                  "nvmlDeviceGetTemperature",                "temperature_gpu",           false},
  {M::kEnergy,           "energy_mj",             "mJ",    "",                              "TOTEC", 156,  "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",  "nvmlDeviceGetTotalEnergyConsumption",     "",                          false},
  {M::kClockEventReasons,"clock_event_reasons",   "",      "clocks_event_reasons.active",   "",      112,  "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",    "nvmlDeviceGetCurrentClocksEventReasons",  "",                          false},
  {M::kPstate,           "pstate",                "",      "pstate",                        "",      190,  "DCGM_FI_DEV_PSTATE",                    "nvmlDeviceGetPerformanceState",           "",                          false},
  {M::kPcieLinkGen,      "pcie_link_gen",         "",      "pcie.link.gen.current",         "",      235,  "DCGM_FI_DEV_PCIE_LINK_GEN",             "nvmlDeviceGetCurrPcieLinkGeneration",     "",                          false},
  {M::kPcieTx,           "pcie_tx_bps",           "B/s",   "",                              "PCITX", 1009, "DCGM_FI_PROF_PCIE_TX_BYTES",            "nvmlDeviceGetPcieThroughput",             "",                          false},
  {M::kPcieRx,           "pcie_rx_bps",           "B/s",   "",                              "PCIRX", 1010, "DCGM_FI_PROF_PCIE_RX_BYTES",            "nvmlDeviceGetPcieThroughput",             "",                          false},
  {M::kGrEngineActive,   "gr_engine_active_ratio","ratio", "",                              "GRACT", 1001, "DCGM_FI_PROF_GR_ENGINE_ACTIVE",         "",                                        "",                          false},
  {M::kSmActive,         "sm_active_ratio",       "ratio", "",                              "SMACT", 1002, "DCGM_FI_PROF_SM_ACTIVE",                "",                                        "",                          false},
  {M::kSmOccupancy,      "sm_occupancy_ratio",    "ratio", "",                              "SMOCC", 1003, "DCGM_FI_PROF_SM_OCCUPANCY",             "",                                        "",                          false},
  {M::kTensorActive,     "tensor_active_ratio",   "ratio", "",                              "TENSO", 1004, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",       "",                                        "",                          false},
  {M::kDramActive,       "dram_active_ratio",     "ratio", "",                              "DRAMA", 1005, "DCGM_FI_PROF_DRAM_ACTIVE",              "",                                        "",                          false},
  {M::kHostCpuUtil,      "host_cpu_util_pct",     "%",     "",                              "",      0,    "",                                      "",                                        "",                          true},
  {M::kHostMemUsed,      "host_mem_used_mib",     "MiB",   "",                              "",      0,    "",                                      "",                                        "",                          true},
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

std::optional<Metric> metric_by_tag(std::string_view tag) {
  if (tag.empty()) return std::nullopt;
  return find_if([&](const MetricInfo& r) { return r.tag == tag; });
}
std::optional<Metric> metric_by_smi_name(std::string_view name) {
  if (name.empty()) return std::nullopt;
  // nvidia-smi accepts the older spelling "clocks_throttle_reasons.active" too.
  if (name == "clocks_throttle_reasons.active") return Metric::kClockEventReasons;
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
std::optional<Metric> metric_by_dataset_name(std::string_view name) {
  if (name.empty()) return std::nullopt;
  return find_if([&](const MetricInfo& r) { return r.dataset_name == name; });
}

}  // namespace epochcast
