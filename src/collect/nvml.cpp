#include "epochcast/collect/nvml.hpp"
#include "epochcast/core/nan.hpp"

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <limits>

#include "epochcast/core/error.hpp"
#include "nvml_abi.hpp"

namespace epochcast {

namespace {
enum class Need { kRequired, kOptional };
constexpr Need kRequired = Need::kRequired;
constexpr Need kOptional = Need::kOptional;
}  // namespace

// The function table, one pointer per entry point of the list.
struct Nvml::Api {
#define EPOCHCAST_NVML_ENTRY(ret, symbol, fallback, need, params) ret(*symbol) params = nullptr;
#include "nvml_entry_points.def"
#undef EPOCHCAST_NVML_ENTRY
};

namespace {

void* resolve(void* handle, const char* symbol, const char* fallback) {
  if (void* p = dlsym(handle, symbol)) return p;
  return dlsym(handle, fallback);
}

constexpr std::array<Metric, 2> kUtilMetrics{Metric::kGpuUtil, Metric::kMemUtil};
constexpr std::array<Metric, 3> kMemoryMetrics{Metric::kMemUsed, Metric::kMemFree, Metric::kMemTotal};
constexpr std::array<Metric, 1> kPowerMetrics{Metric::kPower};
constexpr std::array<Metric, 1> kSmClockMetrics{Metric::kSmClock};
constexpr std::array<Metric, 1> kGraphicsClockMetrics{Metric::kGraphicsClock};
constexpr std::array<Metric, 1> kMemClockMetrics{Metric::kMemClock};
constexpr std::array<Metric, 1> kTemperatureMetrics{Metric::kTemperature};
constexpr std::array<Metric, 1> kEnergyMetrics{Metric::kEnergy};
constexpr std::array<Metric, 1> kReasonMetrics{Metric::kClockEventReasons};
constexpr std::array<Metric, 1> kPstateMetrics{Metric::kPstate};
constexpr std::array<Metric, 1> kLinkGenMetrics{Metric::kPcieLinkGen};
constexpr std::array<Metric, 1> kPcieTxMetrics{Metric::kPcieTx};
constexpr std::array<Metric, 1> kPcieRxMetrics{Metric::kPcieRx};

constexpr double kBytesPerMib = 1024.0 * 1024.0;

void set(MetricValues& out, Metric m, double v) { out[static_cast<std::size_t>(m)] = v; }

}  // namespace

std::span<const Metric> metrics_of(NvmlQuery query) {
  switch (query) {
    case NvmlQuery::kUtilization: return kUtilMetrics;
    case NvmlQuery::kMemory: return kMemoryMetrics;
    case NvmlQuery::kPower: return kPowerMetrics;
    case NvmlQuery::kSmClock: return kSmClockMetrics;
    case NvmlQuery::kGraphicsClock: return kGraphicsClockMetrics;
    case NvmlQuery::kMemClock: return kMemClockMetrics;
    case NvmlQuery::kTemperature: return kTemperatureMetrics;
    case NvmlQuery::kEnergy: return kEnergyMetrics;
    case NvmlQuery::kClockEventReasons: return kReasonMetrics;
    case NvmlQuery::kPstate: return kPstateMetrics;
    case NvmlQuery::kPcieLinkGen: return kLinkGenMetrics;
    case NvmlQuery::kPcieTx: return kPcieTxMetrics;
    case NvmlQuery::kPcieRx: return kPcieRxMetrics;
  }
  throw Error(ErrorCode::kInternal, "unknown NVML query");
}

const char* to_string(NvmlQuery query) {
  switch (query) {
    case NvmlQuery::kUtilization: return "nvmlDeviceGetUtilizationRates";
    case NvmlQuery::kMemory: return "nvmlDeviceGetMemoryInfo";
    case NvmlQuery::kPower: return "nvmlDeviceGetPowerUsage";
    case NvmlQuery::kSmClock: return "nvmlDeviceGetClockInfo(SM)";
    case NvmlQuery::kGraphicsClock: return "nvmlDeviceGetClockInfo(GRAPHICS)";
    case NvmlQuery::kMemClock: return "nvmlDeviceGetClockInfo(MEM)";
    case NvmlQuery::kTemperature: return "nvmlDeviceGetTemperature";
    case NvmlQuery::kEnergy: return "nvmlDeviceGetTotalEnergyConsumption";
    case NvmlQuery::kClockEventReasons: return "nvmlDeviceGetCurrentClocksEventReasons";
    case NvmlQuery::kPstate: return "nvmlDeviceGetPerformanceState";
    case NvmlQuery::kPcieLinkGen: return "nvmlDeviceGetCurrPcieLinkGeneration";
    case NvmlQuery::kPcieTx: return "nvmlDeviceGetPcieThroughput(TX)";
    case NvmlQuery::kPcieRx: return "nvmlDeviceGetPcieThroughput(RX)";
  }
  return "?";
}

std::span<const char* const> nvml_entry_point_symbols() {
  static constexpr const char* kSymbols[] = {
#define EPOCHCAST_NVML_ENTRY(ret, symbol, fallback, need, params) #symbol,
#include "nvml_entry_points.def"
#undef EPOCHCAST_NVML_ENTRY
  };
  return kSymbols;
}

MetricValues empty_metric_values() {
  MetricValues v;
  v.fill(kNaN);
  return v;
}

std::string Nvml::default_library() {
  const char* env = std::getenv("EPOCHCAST_NVML_LIBRARY");
  return env && *env ? env : "libnvidia-ml.so.1";
}

Nvml::Nvml(std::string library) : api_(std::make_unique<Api>()), library_(std::move(library)) {
  dlerror();
  library_handle_ = dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library_handle_) {
    const char* why = dlerror();
    throw Error(ErrorCode::kDevice,
                fmt::format("cannot load NVML ({}): {}. Is the NVIDIA driver installed? "
                            "Set EPOCHCAST_NVML_LIBRARY to the library's path if it lives elsewhere",
                            library_, why ? why : "unknown dlopen error"));
  }
  std::vector<std::string> missing_required;
#define EPOCHCAST_NVML_ENTRY(ret, symbol, fallback, need, params)                               \
  api_->symbol = reinterpret_cast<ret(*) params>(resolve(library_handle_, #symbol, #fallback)); \
  if (!api_->symbol) (need == kRequired ? missing_required : missing_optional_).push_back(#symbol);
#include "nvml_entry_points.def"
#undef EPOCHCAST_NVML_ENTRY
  auto fail = [&](const std::string& message) {
    dlclose(library_handle_);
    library_handle_ = nullptr;
    throw Error(ErrorCode::kDevice, message);
  };
  if (!missing_required.empty())
    fail(fmt::format("NVML library {} lacks {}: driver too old or not NVML", library_,
                     fmt::join(missing_required, ", ")));
  if (const nvmlReturn_t rc = api_->nvmlInit_v2(); rc != nvml::kSuccess)
    fail(fmt::format("nvmlInit failed ({}): {} ({})", library_, error_string(rc),
                     nvml::return_code_name(rc)));
  unsigned count = 0;
  if (const nvmlReturn_t rc = api_->nvmlDeviceGetCount_v2(&count); rc != nvml::kSuccess) {
    api_->nvmlShutdown();
    fail(fmt::format("nvmlDeviceGetCount failed ({}): {}", library_, error_string(rc)));
  }
  devices_.resize(count, nullptr);
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t device = nullptr;
    // A GPU that cannot be opened stays null: identity() and read() report it.
    if (api_->nvmlDeviceGetHandleByIndex_v2(i, &device) == nvml::kSuccess) devices_[i] = device;
  }
}

Nvml::~Nvml() {
  if (!library_handle_) return;
  api_->nvmlShutdown();
  dlclose(library_handle_);
}

std::string Nvml::error_string(int nvml_code) const {
  if (api_->nvmlErrorString)
    if (const char* s = api_->nvmlErrorString(nvml_code)) return s;
  return nvml::return_code_name(nvml_code);
}

GpuIdentity Nvml::identity(unsigned gpu) const {
  if (gpu >= devices_.size())
    throw Error(ErrorCode::kNotFound, fmt::format("GPU {} not found: NVML reports {} GPU(s)", gpu,
                                                  devices_.size()));
  GpuIdentity id;
  id.index = static_cast<int>(gpu);
  auto* device = static_cast<nvmlDevice_t>(devices_[gpu]);
  if (!device)
    throw Error(ErrorCode::kDevice, fmt::format("GPU {}: NVML cannot open it", gpu));
  char buffer[nvml::kUuidBufferSize > nvml::kNameBufferSize ? nvml::kUuidBufferSize
                                                            : nvml::kNameBufferSize] = {};
  if (api_->nvmlDeviceGetName &&
      api_->nvmlDeviceGetName(device, buffer, nvml::kNameBufferSize) == nvml::kSuccess)
    id.name.assign(buffer, strnlen(buffer, sizeof buffer));
  if (api_->nvmlDeviceGetUUID &&
      api_->nvmlDeviceGetUUID(device, buffer, nvml::kUuidBufferSize) == nvml::kSuccess)
    id.uuid.assign(buffer, strnlen(buffer, sizeof buffer));
  return id;
}

ReadResult Nvml::read(unsigned gpu, NvmlQuery query, MetricValues& out) const {
  if (gpu >= devices_.size() || !devices_[gpu]) return {ReadStatus::kFailed, nvml::kErrorInvalidArgument};
  auto* device = static_cast<nvmlDevice_t>(devices_[gpu]);
  const Api& api = *api_;
  nvmlReturn_t rc = nvml::kErrorFunctionNotFound;
  unsigned value = 0;
  unsigned long long value64 = 0;
  switch (query) {
    case NvmlQuery::kUtilization: {
      nvmlUtilization_t u{};
      if (api.nvmlDeviceGetUtilizationRates && (rc = api.nvmlDeviceGetUtilizationRates(device, &u)) == nvml::kSuccess) {
        set(out, Metric::kGpuUtil, u.gpu);
        set(out, Metric::kMemUtil, u.memory);
      }
      break;
    }
    case NvmlQuery::kMemory: {
      nvmlMemory_t m{};
      if (api.nvmlDeviceGetMemoryInfo && (rc = api.nvmlDeviceGetMemoryInfo(device, &m)) == nvml::kSuccess) {
        set(out, Metric::kMemUsed, static_cast<double>(m.used) / kBytesPerMib);
        set(out, Metric::kMemFree, static_cast<double>(m.free) / kBytesPerMib);
        set(out, Metric::kMemTotal, static_cast<double>(m.total) / kBytesPerMib);
      }
      break;
    }
    case NvmlQuery::kPower:
      if (api.nvmlDeviceGetPowerUsage && (rc = api.nvmlDeviceGetPowerUsage(device, &value)) == nvml::kSuccess)
        set(out, Metric::kPower, value / 1000.0);  // mW -> W
      break;
    case NvmlQuery::kSmClock:
    case NvmlQuery::kGraphicsClock:
    case NvmlQuery::kMemClock: {
      const nvmlClockType_t type = query == NvmlQuery::kSmClock       ? nvml::kClockSm
                                   : query == NvmlQuery::kMemClock    ? nvml::kClockMem
                                                                      : nvml::kClockGraphics;
      if (api.nvmlDeviceGetClockInfo && (rc = api.nvmlDeviceGetClockInfo(device, type, &value)) == nvml::kSuccess)
        set(out, metrics_of(query)[0], value);
      break;
    }
    case NvmlQuery::kTemperature:
      if (api.nvmlDeviceGetTemperature &&
          (rc = api.nvmlDeviceGetTemperature(device, nvml::kTemperatureGpu, &value)) == nvml::kSuccess)
        set(out, Metric::kTemperature, value);
      break;
    case NvmlQuery::kEnergy:
      if (api.nvmlDeviceGetTotalEnergyConsumption &&
          (rc = api.nvmlDeviceGetTotalEnergyConsumption(device, &value64)) == nvml::kSuccess)
        set(out, Metric::kEnergy, static_cast<double>(value64));
      break;
    case NvmlQuery::kClockEventReasons:
      if (api.nvmlDeviceGetCurrentClocksEventReasons &&
          (rc = api.nvmlDeviceGetCurrentClocksEventReasons(device, &value64)) == nvml::kSuccess)
        set(out, Metric::kClockEventReasons, static_cast<double>(value64));
      break;
    case NvmlQuery::kPstate: {
      nvmlPstates_t p = nvml::kPstateUnknown;
      if (api.nvmlDeviceGetPerformanceState && (rc = api.nvmlDeviceGetPerformanceState(device, &p)) == nvml::kSuccess)
        set(out, Metric::kPstate, p == nvml::kPstateUnknown ? kNaN : p);
      break;
    }
    case NvmlQuery::kPcieLinkGen:
      if (api.nvmlDeviceGetCurrPcieLinkGeneration &&
          (rc = api.nvmlDeviceGetCurrPcieLinkGeneration(device, &value)) == nvml::kSuccess)
        set(out, Metric::kPcieLinkGen, value);
      break;
    case NvmlQuery::kPcieTx:
    case NvmlQuery::kPcieRx: {
      const nvmlPcieUtilCounter_t counter = query == NvmlQuery::kPcieTx ? nvml::kPcieTxBytes : nvml::kPcieRxBytes;
      if (api.nvmlDeviceGetPcieThroughput &&
          (rc = api.nvmlDeviceGetPcieThroughput(device, counter, &value)) == nvml::kSuccess)
        set(out, metrics_of(query)[0], value * 1024.0);  // KB/s -> B/s
      break;
    }
  }
  switch (rc) {
    case nvml::kSuccess: return {ReadStatus::kOk, rc};
    case nvml::kErrorNotSupported:
    case nvml::kErrorFunctionNotFound:
    case nvml::kErrorNotFound: return {ReadStatus::kNotSupported, rc};
    case nvml::kErrorGpuIsLost:
    case nvml::kErrorResetRequired: return {ReadStatus::kGpuLost, rc};
    default: return {ReadStatus::kFailed, rc};
  }
}

}  // namespace epochcast
