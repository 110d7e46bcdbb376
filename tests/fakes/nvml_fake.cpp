// libnvml_fake.so: a fake NVML that replays a recorded trace, for tests and benchmarks on
// machines without a GPU. Same C ABI and symbols as the driver (nvml_entry_points.def).
//
// Environment (read by nvmlInit):
//   EPOCHCAST_FAKE_NVML_TRACE=PATH       trace to replay, any format epochcast reads (required)
//   EPOCHCAST_FAKE_NVML_SPEED=K          K trace seconds per wall-clock second (default 1)
//   EPOCHCAST_FAKE_NVML_LOOP=1           start over at the end (default: hold the last sample)
//   EPOCHCAST_FAKE_NVML_GPUS=N           expose N GPUs, each replaying the trace (default 1)
//   EPOCHCAST_FAKE_NVML_NOT_SUPPORTED=T,…  canonical tags (power_w, sm_clock_mhz, …) answered
//                                        NOT_SUPPORTED; metrics the trace lacks are too
//   EPOCHCAST_FAKE_NVML_LOST_AFTER_S=S   every device call returns GPU_IS_LOST S wall seconds
//                                        after nvmlInit (EPOCHCAST_FAKE_NVML_LOST_GPU=I: only GPU I)
//   EPOCHCAST_FAKE_NVML_VALUE=T=V,…     metric T (canonical tag and unit) always answers V: an
//                                        impossible reading (gpu_util_pct=250) for the range check
//   EPOCHCAST_FAKE_NVML_SLOW_MS=MS       every device query sleeps MS first
//   EPOCHCAST_FAKE_NVML_PCIE_MS=MS       nvmlDeviceGetPcieThroughput blocks MS (default 20, as
//                                        the driver does); answers EPOCHCAST_FAKE_NVML_PCIE_KBPS
//                                        (NOT_SUPPORTED when unset and the trace has no PCIe)
//   EPOCHCAST_FAKE_NVML_INIT_ERROR=CODE  nvmlInit returns CODE (e.g. 9 = DRIVER_NOT_LOADED)
//   EPOCHCAST_FAKE_NVML_START_FILE=PATH  the replay holds its first sample until PATH exists and
//                                        starts then (a test starts it once a scraper is ready)
//   EPOCHCAST_FAKE_NVML_STALL=N:MS      every Nth nvmlDeviceGetPowerUsage call sleeps MS before
//                                        reading: a collector preempted between a tick's
//                                        timestamp and its power read
//   EPOCHCAST_FAKE_NVML_REPLAY_LOG=PATH  written once when the replay starts: the wall-clock Unix
//                                        time (seconds, µs digits) at which trace time 0 was
//                                        current, so a test can tell at which trace instant each
//                                        collected row's timestamp falls without guessing
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "epochcast/trace/read.hpp"
#include "nvml_abi.hpp"

#define EPOCHCAST_NVML_ENTRY(ret, symbol, fallback, need, params) \
  extern "C" __attribute__((visibility("default"))) ret symbol params;
#include "nvml_entry_points.def"
#undef EPOCHCAST_NVML_ENTRY

namespace {

using epochcast::Metric;
using Clock = std::chrono::steady_clock;
namespace nv = epochcast::nvml;

struct FakeDevice {
  unsigned index = 0;
};

struct FakeState {
  epochcast::Trace trace;
  std::vector<double> energy_mj;  // integrated from power when the trace has no energy channel
  double speed = 1.0;
  bool loop = false;
  std::set<Metric> not_supported;
  double lost_after_s = -1;
  int lost_gpu = -1;  // -1: all
  int slow_ms = 0;
  int stall_every = 0;  // EPOCHCAST_FAKE_NVML_STALL: every Nth power read sleeps stall_ms
  int stall_ms = 0;
  std::atomic<long> power_calls{0};
  int pcie_ms = 20;
  double pcie_kbps = -1;
  std::map<Metric, double> fixed;           // EPOCHCAST_FAKE_NVML_VALUE: answered instead of the replay
  Clock::time_point start;
  std::string start_file;                   // replay held until it exists
  std::string replay_log;                   // the replay's start (Unix seconds) is written here
  std::atomic<bool> replaying{true};
  std::atomic<Clock::rep> replay_start{0};  // Clock ticks since its epoch
  std::vector<FakeDevice> devices;
};

std::mutex g_mutex;
FakeState* g_state = nullptr;  // built by the first nvmlInit, dropped by the last nvmlShutdown
std::atomic<int> g_init_count{0};

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// The replay's start as wall-clock Unix seconds, for EPOCHCAST_FAKE_NVML_REPLAY_LOG. Taken right
// after the steady-clock start it stands for.
void log_replay_start(const std::string& path) {
  if (path.empty()) return;
  const double unix_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (std::FILE* f = std::fopen(path.c_str(), "w")) {
    std::fprintf(f, "%.6f\n", unix_s);
    std::fclose(f);
  } else {
    std::fprintf(stderr, "libnvml_fake: cannot write %s\n", path.c_str());
  }
}

nvmlReturn_t load_state() {
  if (g_state) return nv::kSuccess;
  const char* path = env("EPOCHCAST_FAKE_NVML_TRACE");
  if (!path) {
    std::fprintf(stderr, "libnvml_fake: EPOCHCAST_FAKE_NVML_TRACE is not set\n");
    return nv::kErrorDriverNotLoaded;
  }
  auto state = std::make_unique<FakeState>();
  try {
    state->trace = epochcast::read_trace(path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "libnvml_fake: %s\n", e.what());
    return nv::kErrorUnknown;
  }
  if (state->trace.size() == 0) {
    std::fprintf(stderr, "libnvml_fake: %s has no samples\n", path);
    return nv::kErrorUnknown;
  }
  if (const char* v = env("EPOCHCAST_FAKE_NVML_SPEED")) state->speed = std::max(1e-6, std::atof(v));
  if (const char* v = env("EPOCHCAST_FAKE_NVML_LOOP")) state->loop = std::strcmp(v, "0") != 0;
  if (const char* v = env("EPOCHCAST_FAKE_NVML_LOST_AFTER_S")) state->lost_after_s = std::atof(v);
  if (const char* v = env("EPOCHCAST_FAKE_NVML_LOST_GPU")) state->lost_gpu = std::atoi(v);
  if (const char* v = env("EPOCHCAST_FAKE_NVML_SLOW_MS")) state->slow_ms = std::atoi(v);
  if (const char* v = env("EPOCHCAST_FAKE_NVML_STALL")) {
    if (std::sscanf(v, "%d:%d", &state->stall_every, &state->stall_ms) != 2 || state->stall_every <= 0) {
      std::fprintf(stderr, "libnvml_fake: EPOCHCAST_FAKE_NVML_STALL: expected N:MS, got '%s'\n", v);
      state->stall_every = 0;
    }
  }
  if (const char* v = env("EPOCHCAST_FAKE_NVML_PCIE_MS")) state->pcie_ms = std::atoi(v);
  if (const char* v = env("EPOCHCAST_FAKE_NVML_PCIE_KBPS")) state->pcie_kbps = std::atof(v);
  if (const char* v = env("EPOCHCAST_FAKE_NVML_NOT_SUPPORTED")) {
    std::string list = v;
    std::size_t begin = 0;
    while (begin <= list.size()) {
      const std::size_t end = std::min(list.find(',', begin), list.size());
      const std::string tag = list.substr(begin, end - begin);
      if (auto m = epochcast::metric_by_tag(tag)) state->not_supported.insert(*m);
      else if (!tag.empty()) std::fprintf(stderr, "libnvml_fake: unknown metric tag '%s'\n", tag.c_str());
      begin = end + 1;
    }
  }
  if (const char* v = env("EPOCHCAST_FAKE_NVML_VALUE")) {
    std::string list = v;
    std::size_t begin = 0;
    while (begin < list.size()) {
      const std::size_t end = std::min(list.find(',', begin), list.size());
      const std::string item = list.substr(begin, end - begin);
      const std::size_t eq = item.find('=');
      const auto m = eq == std::string::npos ? std::nullopt : epochcast::metric_by_tag(item.substr(0, eq));
      if (m) state->fixed[*m] = std::atof(item.c_str() + eq + 1);
      else std::fprintf(stderr, "libnvml_fake: EPOCHCAST_FAKE_NVML_VALUE: not TAG=VALUE: '%s'\n", item.c_str());
      begin = end + 1;
    }
  }
  unsigned gpus = 1;
  if (const char* v = env("EPOCHCAST_FAKE_NVML_GPUS")) gpus = static_cast<unsigned>(std::max(0, std::atoi(v)));
  for (unsigned i = 0; i < gpus; ++i) state->devices.push_back(FakeDevice{i});
  if (!state->trace.find(Metric::kEnergy)) {
    if (const auto* power = state->trace.find(Metric::kPower)) {
      const auto& t = state->trace.time_s;
      state->energy_mj.assign(t.size(), 0.0);
      double total = 0;
      for (std::size_t i = 1; i < t.size(); ++i) {
        const double p = power->values[i - 1];
        if (std::isfinite(p)) total += p * (t[i] - t[i - 1]) * 1000.0;
        state->energy_mj[i] = total;
      }
    }
  }
  if (const char* v = env("EPOCHCAST_FAKE_NVML_REPLAY_LOG")) state->replay_log = v;
  state->start = Clock::now();
  state->replay_start = state->start.time_since_epoch().count();
  if (const char* v = env("EPOCHCAST_FAKE_NVML_START_FILE")) {
    state->start_file = v;
    state->replaying = false;
  } else {
    log_replay_start(state->replay_log);
  }
  g_state = state.release();
  return nv::kSuccess;
}

double elapsed_s() {
  return std::chrono::duration<double>(Clock::now() - g_state->start).count();
}

// Wall seconds since the replay started (0 while it waits for its start file).
double replay_elapsed_s() {
  if (!g_state->replaying) {
    if (::access(g_state->start_file.c_str(), F_OK) != 0) return 0;
    Clock::rep expected = g_state->start.time_since_epoch().count();
    if (g_state->replay_start.compare_exchange_strong(expected, Clock::now().time_since_epoch().count()))
      log_replay_start(g_state->replay_log);
    g_state->replaying = true;
  }
  const Clock::time_point begin{Clock::duration(g_state->replay_start.load())};
  return std::chrono::duration<double>(Clock::now() - begin).count();
}

// Index of the trace sample current at this wall-clock instant.
std::size_t current_sample() {
  const auto& t = g_state->trace.time_s;
  double at = replay_elapsed_s() * g_state->speed;
  if (g_state->loop) {
    const double span = t.back() + std::max(g_state->trace.median_interval_s(), 1e-3);
    at = std::fmod(at, span);
  }
  const auto it = std::upper_bound(t.begin(), t.end(), at);
  return it == t.begin() ? 0 : static_cast<std::size_t>(it - t.begin()) - 1;
}

// Common checks for a device call: handle, lost GPU, slowness.
nvmlReturn_t enter(nvmlDevice_t device, const FakeDevice** out) {
  if (!g_state || g_init_count.load() <= 0) return nv::kErrorUninitialized;
  const auto* d = reinterpret_cast<const FakeDevice*>(device);
  if (!d || d < g_state->devices.data() || d >= g_state->devices.data() + g_state->devices.size())
    return nv::kErrorInvalidArgument;
  if (g_state->slow_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(g_state->slow_ms));
  if (g_state->lost_after_s >= 0 && elapsed_s() >= g_state->lost_after_s &&
      (g_state->lost_gpu < 0 || g_state->lost_gpu == static_cast<int>(d->index)))
    return nv::kErrorGpuIsLost;
  *out = d;
  return nv::kSuccess;
}

// The current value of one metric, or the NVML code a driver would give.
nvmlReturn_t value_of(Metric m, double* out) {
  if (g_state->not_supported.count(m)) return nv::kErrorNotSupported;
  if (auto it = g_state->fixed.find(m); it != g_state->fixed.end()) {
    *out = it->second;
    return nv::kSuccess;
  }
  const std::size_t i = current_sample();
  if (m == Metric::kEnergy && !g_state->energy_mj.empty()) {
    *out = g_state->energy_mj[i];
    return nv::kSuccess;
  }
  const auto* channel = g_state->trace.find(m);
  if (!channel) return nv::kErrorNotSupported;
  const double v = channel->values[i];
  if (!std::isfinite(v)) return nv::kErrorNoData;
  *out = v;
  return nv::kSuccess;
}

template <typename T>
nvmlReturn_t read_metric(nvmlDevice_t device, Metric m, T* out, double scale = 1.0) {
  const FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = enter(device, &d); rc != nv::kSuccess) return rc;
  if (!out) return nv::kErrorInvalidArgument;
  double v = 0;
  if (nvmlReturn_t rc = value_of(m, &v); rc != nv::kSuccess) return rc;
  *out = static_cast<T>(std::llround(std::max(0.0, v * scale)));
  return nv::kSuccess;
}

nvmlReturn_t copy_string(const std::string& s, char* out, unsigned length) {
  if (!out) return nv::kErrorInvalidArgument;
  if (s.size() + 1 > length) return nv::kErrorInsufficientSize;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return nv::kSuccess;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlInit_v2(void) {
  std::lock_guard lock(g_mutex);
  if (const char* v = env("EPOCHCAST_FAKE_NVML_INIT_ERROR")) return std::atoi(v);
  if (nvmlReturn_t rc = load_state(); rc != nv::kSuccess) return rc;
  ++g_init_count;
  return nv::kSuccess;
}

nvmlReturn_t nvmlShutdown(void) {
  std::lock_guard lock(g_mutex);
  if (g_init_count.load() <= 0) return nv::kErrorUninitialized;
  if (--g_init_count == 0) {  // the next nvmlInit reads the environment again
    delete g_state;
    g_state = nullptr;
  }
  return nv::kSuccess;
}

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case nv::kErrorGpuIsLost: return "GPU is lost (fake)";
    case nv::kErrorNotSupported: return "Not Supported (fake)";
    default: return nv::return_code_name(result);
  }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* device_count) {
  if (!g_state || g_init_count.load() <= 0) return nv::kErrorUninitialized;
  if (!device_count) return nv::kErrorInvalidArgument;
  *device_count = static_cast<unsigned>(g_state->devices.size());
  return nv::kSuccess;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (!g_state || g_init_count.load() <= 0) return nv::kErrorUninitialized;
  if (!device || index >= g_state->devices.size()) return nv::kErrorInvalidArgument;
  *device = reinterpret_cast<nvmlDevice_t>(&g_state->devices[index]);
  return nv::kSuccess;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  const FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = enter(device, &d); rc != nv::kSuccess) return rc;
  const std::string& n = g_state->trace.gpu.name;
  return copy_string(n.empty() ? "Fake GPU" : n, name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  const FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = enter(device, &d); rc != nv::kSuccess) return rc;
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "GPU-fa4e0000-0000-4000-8000-%012u", d->index);
  return copy_string(buffer, uuid, length);
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  const FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = enter(device, &d); rc != nv::kSuccess) return rc;
  if (!utilization) return nv::kErrorInvalidArgument;
  double gpu = 0, memory = 0;
  if (nvmlReturn_t rc = value_of(Metric::kGpuUtil, &gpu); rc != nv::kSuccess) return rc;
  if (value_of(Metric::kMemUtil, &memory) != nv::kSuccess) memory = 0;
  utilization->gpu = static_cast<unsigned>(std::llround(gpu));
  utilization->memory = static_cast<unsigned>(std::llround(memory));
  return nv::kSuccess;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  const FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = enter(device, &d); rc != nv::kSuccess) return rc;
  if (!memory) return nv::kErrorInvalidArgument;
  constexpr double kMib = 1024.0 * 1024.0;
  double used = 0, free_mib = 0, total = 0;
  if (nvmlReturn_t rc = value_of(Metric::kMemUsed, &used); rc != nv::kSuccess) return rc;
  if (value_of(Metric::kMemTotal, &total) != nv::kSuccess) total = used;
  if (value_of(Metric::kMemFree, &free_mib) != nv::kSuccess) free_mib = std::max(0.0, total - used);
  memory->used = static_cast<unsigned long long>(used * kMib);
  memory->free = static_cast<unsigned long long>(free_mib * kMib);
  memory->total = static_cast<unsigned long long>(total * kMib);
  return nv::kSuccess;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power_mw) {
  if (g_state && g_state->stall_every > 0 && ++g_state->power_calls % g_state->stall_every == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(g_state->stall_ms));
  return read_metric(device, Metric::kPower, power_mw, 1000.0);
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock_mhz) {
  switch (type) {
    case nv::kClockGraphics: return read_metric(device, Metric::kGraphicsClock, clock_mhz);
    case nv::kClockSm: return read_metric(device, Metric::kSmClock, clock_mhz);
    case nv::kClockMem: return read_metric(device, Metric::kMemClock, clock_mhz);
    default: return nv::kErrorInvalidArgument;
  }
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor,
                                      unsigned int* temperature_c) {
  if (sensor != nv::kTemperatureGpu) return nv::kErrorInvalidArgument;
  return read_metric(device, Metric::kTemperature, temperature_c);
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* energy_mj) {
  return read_metric(device, Metric::kEnergy, energy_mj);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long* reasons) {
  return read_metric(device, Metric::kClockEventReasons, reasons);
}

nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, nvmlPstates_t* pstate) {
  return read_metric(device, Metric::kPstate, pstate);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int* link_gen) {
  return read_metric(device, Metric::kPcieLinkGen, link_gen);
}

nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, nvmlPcieUtilCounter_t counter,
                                         unsigned int* kb_per_s) {
  const FakeDevice* d = nullptr;
  if (nvmlReturn_t rc = enter(device, &d); rc != nv::kSuccess) return rc;
  if (!kb_per_s || (counter != nv::kPcieTxBytes && counter != nv::kPcieRxBytes)) return nv::kErrorInvalidArgument;
  std::this_thread::sleep_for(std::chrono::milliseconds(g_state->pcie_ms));  // the driver blocks too
  const Metric m = counter == nv::kPcieTxBytes ? Metric::kPcieTx : Metric::kPcieRx;
  double v = 0;
  if (g_state->not_supported.count(m)) return nv::kErrorNotSupported;
  if (value_of(m, &v) == nv::kSuccess) {
    *kb_per_s = static_cast<unsigned>(v / 1024.0);
    return nv::kSuccess;
  }
  if (g_state->pcie_kbps < 0) return nv::kErrorNotSupported;
  *kb_per_s = static_cast<unsigned>(g_state->pcie_kbps);
  return nv::kSuccess;
}

}  // extern "C"
