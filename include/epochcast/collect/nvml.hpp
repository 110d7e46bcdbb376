// NVML, loaded at run time (dlopen) with the project's own declarations of the few functions
// it calls (src/collect/nvml_entry_points.def). Only the collect stage touches the driver.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "epochcast/core/metric.hpp"
#include "epochcast/trace/trace.hpp"

namespace epochcast {

// One NVML call; each fills one or more metrics.
enum class NvmlQuery : std::uint8_t {
  kUtilization,       // gpu + memory utilisation
  kMemory,            // used, free, total
  kPower,
  kSmClock,
  kGraphicsClock,
  kMemClock,
  kTemperature,
  kEnergy,
  kClockEventReasons,
  kPstate,
  kPcieLinkGen,
  kPcieTx,            // blocks ~20 ms in the driver: poll on its own thread
  kPcieRx,            // blocks ~20 ms in the driver: poll on its own thread
};
inline constexpr std::size_t kNvmlQueryCount = 13;

[[nodiscard]] std::span<const Metric> metrics_of(NvmlQuery query);
[[nodiscard]] const char* to_string(NvmlQuery query);  // the NVML function name

// One value per metric, indexed by Metric, in the metric table's canonical units; NaN = absent.
using MetricValues = std::array<double, kMetricCount>;
[[nodiscard]] MetricValues empty_metric_values();

enum class ReadStatus : std::uint8_t {
  kOk,
  kNotSupported,  // this GPU or driver does not report it: a normal, typed state
  kGpuLost,       // GPU_IS_LOST / RESET_REQUIRED: stop reading this GPU
  kFailed,        // any other NVML error for this one read
};

struct ReadResult {
  ReadStatus status = ReadStatus::kOk;
  int nvml_code = 0;  // the nvmlReturn_t value
};

// Every NVML symbol the loader resolves (the newest name of each entry point), in list order.
[[nodiscard]] std::span<const char* const> nvml_entry_point_symbols();

class Nvml {
 public:
  // $EPOCHCAST_NVML_LIBRARY when set, else "libnvidia-ml.so.1" (the driver's soname).
  [[nodiscard]] static std::string default_library();

  // Loads the library, resolves the entry points (versioned names first) and calls nvmlInit.
  // Throws Error(kDevice) naming the library and the cause when there is no driver, a required
  // symbol is missing, or nvmlInit fails.
  explicit Nvml(std::string library = default_library());
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  [[nodiscard]] const std::string& library() const { return library_; }
  [[nodiscard]] unsigned device_count() const { return static_cast<unsigned>(devices_.size()); }
  // Index, name and UUID of a GPU; Error(kNotFound) for an index the driver does not have.
  [[nodiscard]] GpuIdentity identity(unsigned gpu) const;
  // One NVML call for one GPU; fills the query's metrics in `out` on success. Thread-safe (NVML is).
  ReadResult read(unsigned gpu, NvmlQuery query, MetricValues& out) const;
  // The driver's text for a return code, e.g. "GPU is lost" (falls back to the code's name).
  [[nodiscard]] std::string error_string(int nvml_code) const;
  // Optional entry points the library lacks (their metrics read as NOT_SUPPORTED).
  [[nodiscard]] const std::vector<std::string>& missing_optional() const { return missing_optional_; }

 private:
  struct Api;
  std::unique_ptr<Api> api_;
  void* library_handle_ = nullptr;
  std::string library_;
  std::vector<void*> devices_;
  std::vector<std::string> missing_optional_;
};

}  // namespace epochcast
