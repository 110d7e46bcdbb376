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
#include <string_view>
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
  // A tick later than this behind its deadline (process stopped, machine suspended) does not
  // catch up tick by tick: the deadlines in between are recorded as one gap and skipped.
  std::chrono::milliseconds max_behind{1000};
};

namespace collect {
// NVML device indices to sample: "all" (empty: every GPU), "N" or "N,M,…". Error(kInvalidArgument)
// naming the text for anything else, a GPU listed twice included (it would give every row
// twice). (The service's parse_gpu_list reads catalog ids.)
[[nodiscard]] std::vector<unsigned> parse_gpu_list(std::string_view text);
}  // namespace collect

// One GPU's values at one tick.
struct GpuSample {
  std::size_t slot;      // position in Sampler::gpus()
  MetricValues values;   // NaN: absent this tick
};

struct Tick {
  std::uint64_t sequence;  // deadline number since the start: 0, 1, 2, …; jumps only at recorded gaps
  double unix_s;           // wall time the tick's reads began
  double elapsed_s;        // seconds since the sampler started (monotonic clock)
  double lateness_s;       // how long after its deadline the reads began
  std::span<const GpuSample> gpus;  // the GPUs still answering
};

// Tick lateness in a fixed log-scale histogram: bounded memory for runs of any length,
// quantiles within ~1.6 % (32 buckets per power of two from 1 µs).
class LatenessHistogram {
 public:
  void add(double seconds);
  [[nodiscard]] std::uint64_t count() const { return count_; }
  // Seconds; 0 when empty. q in [0, 1].
  [[nodiscard]] double quantile(double q) const;
  [[nodiscard]] double max_s() const { return max_s_; }
  [[nodiscard]] double mean_s() const { return count_ ? sum_s_ / static_cast<double>(count_) : 0.0; }

 private:
  static constexpr int kSubBuckets = 32;
  static constexpr int kOctaves = 42;  // 1 µs .. 2^42 µs (~50 days)
  std::vector<std::uint64_t> buckets_ = std::vector<std::uint64_t>(1 + kSubBuckets * kOctaves);
  std::uint64_t count_ = 0;
  double sum_s_ = 0;
  double max_s_ = 0;
};

// Deadlines that were not sampled: the sampler was stopped or starved past max_behind.
struct SamplerGap {
  std::uint64_t first_sequence;  // first deadline not sampled
  std::uint64_t ticks;           // deadlines not sampled
  double behind_s;               // how late the sampler woke
  double elapsed_s;              // when it woke (seconds since the start)
};

struct SamplerStats {
  std::uint64_t ticks = 0;          // ticks sampled: one per deadline, apart from gaps
  std::uint64_t missed_ticks = 0;   // deadlines not sampled (the sum of the gaps' ticks)
  std::uint64_t late_ticks = 0;     // ticks sampled a whole interval or more after their deadline
  std::vector<SamplerGap> gaps;     // each re-anchoring, in order
  LatenessHistogram lateness;       // every sampled tick's lateness
  std::uint64_t failed_reads = 0;   // NVML calls that failed (cell left empty)
  std::uint64_t impossible_values = 0;  // readings outside the metric's limits (cell left empty)
  std::uint64_t pcie_polls = 0;     // completed PCIe TX+RX rounds (its own thread)
  // Time from a tick's timestamp to its last read. A tick whose reads spread over more than 4x
  // the median span (at least 2 ms: the thread was preempted between stamp and reads) is read
  // once more with a new timestamp (reread_ticks); spread again, it is kept (spread_ticks).
  LatenessHistogram read_span;
  std::uint64_t reread_ticks = 0;
  std::uint64_t spread_ticks = 0;
  std::vector<std::string> errors;  // GPUs lost, with when and why
};

// "60000 ticks, 0 missed (0 gaps), 12 late; lateness p50 0.06 ms, p99 1.2 ms, max 9.8 ms; 0 read again"
// (", 1 spread" after "read again" when a tick's second read spread as well)
[[nodiscard]] std::string describe_schedule(const SamplerStats& stats);

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
  // good (and reported through `messages()`). Error(kNotFound) for a GPU index NVML lacks,
  // Error(kInvalidArgument) for one selected twice.
  Sampler(const Nvml& nvml, SamplerOptions options);
  ~Sampler();

  [[nodiscard]] const std::vector<GpuIdentity>& gpus() const { return gpus_; }
  // Metrics at least one selected GPU reports (plus host metrics), in metric-table order.
  [[nodiscard]] const std::vector<Metric>& columns() const { return columns_; }
  // What probing found: "GPU 0: nvmlDeviceGetTotalEnergyConsumption not supported; energy_mj absent".
  [[nodiscard]] const std::vector<std::string>& messages() const { return probe_messages_; }

  // Samples on the calling thread until the duration has passed, should_stop says so, stop() is
  // called, or every GPU is lost. Reads are scheduled on absolute deadlines (no drift), and
  // every deadline is sampled exactly once: a late one is read as soon as possible (at least
  // max(1 ms, interval/4) after the previous read, so timestamps stay distinct) with its real
  // time, and its lateness is counted. Only beyond max_behind are deadlines skipped, as one
  // recorded gap (SamplerStats::gaps, a message), re-anchoring on the same grid.
  void run(const SamplerHooks& hooks);
  // Ends run() at its next tick; callable from any thread (and from a signal handler).
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
