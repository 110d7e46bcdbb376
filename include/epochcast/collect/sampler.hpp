// The sampling loop: every interval, one NVML read per supported query for each selected GPU.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "epochcast/collect/nvml.hpp"
#include "epochcast/trace/trace.hpp"

namespace epochcast {

struct SamplerOptions {
  std::chrono::milliseconds interval{100};
  std::optional<double> duration_s;  // stop after this long; none: until stopped
  std::vector<unsigned> gpus;        // NVML indices; empty: every GPU
  bool host = false;                 // host CPU and memory from /proc
  bool pcie = false;                 // PCIe throughput, polled on its own thread (blocks ~20 ms/call)
};

// One GPU's values at one tick.
struct GpuSample {
  std::size_t slot;      // position in Sampler::gpus()
  MetricValues values;   // NaN: absent this tick
};

struct Tick {
  std::uint64_t sequence;  // deadline number since the start: 0, 1, 2, …; a jump = missed ticks
  double unix_s;           // wall time the tick's reads began
  double elapsed_s;        // seconds since the sampler started (monotonic clock)
  std::span<const GpuSample> gpus;  // the GPUs still answering
};

struct SamplerStats {
  std::uint64_t ticks = 0;          // ticks sampled
  std::uint64_t missed_ticks = 0;   // deadlines skipped because a tick ran past the next one
  std::uint64_t failed_reads = 0;   // NVML calls that failed (cell left empty)
  std::uint64_t pcie_polls = 0;     // completed PCIe TX+RX rounds (its own thread)
  std::vector<std::string> errors;  // GPUs lost, with when and why
};

struct SamplerHooks {
  std::function<void(const Tick&)> on_tick;
  // Warnings and errors worth a line on the terminal and a comment in the trace; each once.
  std::function<void(const std::string&)> on_message;
  // Polled before each tick; true ends the run (signals, the training command exiting).
  std::function<bool()> should_stop;
};

class Sampler {
 public:
  // Opens the selected GPUs and probes each query once: unsupported ones are marked absent for
  // good (and reported through `messages()`). Error(kNotFound) for a GPU index NVML lacks.
  Sampler(const Nvml& nvml, SamplerOptions options);
  ~Sampler();

  [[nodiscard]] const std::vector<GpuIdentity>& gpus() const { return gpus_; }
  // Metrics at least one selected GPU reports (plus host metrics), in metric-table order.
  [[nodiscard]] const std::vector<Metric>& columns() const { return columns_; }
  // What probing found: "GPU 0: nvmlDeviceGetTotalEnergyConsumption not supported; energy_mj absent".
  [[nodiscard]] const std::vector<std::string>& messages() const { return probe_messages_; }

  // Samples on the calling thread until the duration has passed, should_stop says so, stop() is
  // called, or every GPU is lost. Reads are scheduled on absolute deadlines (no drift).
  void run(const SamplerHooks& hooks);
  // Ends run() at its next tick; callable from any thread.
  void stop() { stop_requested_ = true; }
  [[nodiscard]] const SamplerStats& stats() const { return stats_; }

 private:
  struct GpuState;
  void pcie_loop();

  const Nvml& nvml_;
  SamplerOptions options_;
  std::vector<GpuIdentity> gpus_;
  std::vector<GpuState> states_;
  std::vector<Metric> columns_;
  std::vector<std::string> probe_messages_;
  SamplerStats stats_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> pcie_stop_{false};
  std::mutex pcie_mutex_;
};

// Host CPU utilisation (all cores, since the previous call) and used memory, from /proc.
class HostSampler {
 public:
  HostSampler();
  // Fills kHostCpuUtil and kHostMemUsed; NaN when /proc cannot be read.
  void sample(MetricValues& out);

 private:
  std::uint64_t last_busy_ = 0;
  std::uint64_t last_total_ = 0;
};

}  // namespace epochcast
