#include "epochcast/collect/sampler.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include "epochcast/core/error.hpp"

namespace epochcast {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::array kTickQueries{
    NvmlQuery::kUtilization, NvmlQuery::kMemory,      NvmlQuery::kPower,
    NvmlQuery::kSmClock,     NvmlQuery::kGraphicsClock, NvmlQuery::kMemClock,
    NvmlQuery::kTemperature, NvmlQuery::kEnergy,      NvmlQuery::kClockEventReasons,
    NvmlQuery::kPstate,      NvmlQuery::kPcieLinkGen};
constexpr std::array kPcieQueries{NvmlQuery::kPcieTx, NvmlQuery::kPcieRx};

std::size_t idx(NvmlQuery q) { return static_cast<std::size_t>(q); }
std::size_t idx(Metric m) { return static_cast<std::size_t>(m); }

std::string describe(const GpuIdentity& gpu) {
  std::string s = fmt::format("GPU {}", gpu.index);
  if (!gpu.name.empty()) s += fmt::format(" ({}{}{})", gpu.name, gpu.uuid.empty() ? "" : ", ", gpu.uuid);
  return s;
}

std::string tags_of(NvmlQuery q) {
  std::string s;
  for (Metric m : metrics_of(q)) s += (s.empty() ? "" : ", ") + std::string(info(m).tag);
  return s;
}

}  // namespace

struct Sampler::GpuState {
  unsigned nvml_index = 0;
  std::array<bool, kNvmlQueryCount> supported{};
  std::array<bool, kNvmlQueryCount> failure_reported{};
  bool lost = false;
  double pcie_tx_bps = kNaN;  // latest from the PCIe thread (guarded by pcie_mutex_)
  double pcie_rx_bps = kNaN;
};

Sampler::Sampler(const Nvml& nvml, SamplerOptions options) : nvml_(nvml), options_(std::move(options)) {
  if (options_.interval.count() <= 0)
    throw Error(ErrorCode::kInvalidArgument, "sampling interval must be at least 1 ms");
  std::vector<unsigned> indices = options_.gpus;
  if (indices.empty())
    for (unsigned i = 0; i < nvml_.device_count(); ++i) indices.push_back(i);
  if (indices.empty()) throw Error(ErrorCode::kNotFound, fmt::format("NVML ({}) reports no GPU", nvml_.library()));

  std::array<bool, kMetricCount> reported{};
  for (unsigned index : indices) {
    GpuIdentity id = nvml_.identity(index);  // Error(kNotFound) for a bad index
    GpuState state;
    state.nvml_index = index;
    MetricValues scratch = empty_metric_values();
    auto probe = [&](NvmlQuery q) {
      const ReadResult r = nvml_.read(index, q, scratch);
      if (r.status == ReadStatus::kGpuLost)
        throw Error(ErrorCode::kDevice, fmt::format("{} is lost: {}", describe(id), nvml_.error_string(r.nvml_code)));
      // A transient failure at probe time is not proof of absence: keep the query.
      state.supported[idx(q)] = r.status != ReadStatus::kNotSupported;
      if (state.supported[idx(q)]) {
        for (Metric m : metrics_of(q)) reported[idx(m)] = true;
      } else {
        probe_messages_.push_back(fmt::format("GPU {}: {} not supported; {} absent", index, to_string(q), tags_of(q)));
      }
    };
    for (NvmlQuery q : kTickQueries) probe(q);
    if (options_.pcie)
      for (NvmlQuery q : kPcieQueries) probe(q);
    gpus_.push_back(std::move(id));
    states_.push_back(state);
  }
  if (options_.host) reported[idx(Metric::kHostCpuUtil)] = reported[idx(Metric::kHostMemUsed)] = true;
  for (const MetricInfo& row : metric_table())
    if (reported[idx(row.id)]) columns_.push_back(row.id);
}

Sampler::~Sampler() = default;

void Sampler::pcie_loop() {
  while (!pcie_stop_) {
    bool any = false;
    for (std::size_t slot = 0; slot < states_.size() && !pcie_stop_; ++slot) {
      GpuState& s = states_[slot];
      if (s.lost) continue;
      MetricValues v = empty_metric_values();
      for (NvmlQuery q : kPcieQueries)
        if (s.supported[idx(q)]) {
          any = true;
          nvml_.read(s.nvml_index, q, v);  // failures leave NaN; the tick loop reports lost GPUs
        }
      std::lock_guard lock(pcie_mutex_);
      s.pcie_tx_bps = v[idx(Metric::kPcieTx)];
      s.pcie_rx_bps = v[idx(Metric::kPcieRx)];
    }
    if (!any) return;
    ++stats_.pcie_polls;
  }
}

void Sampler::run(const SamplerHooks& hooks) {
  auto message = [&](const std::string& text) {
    if (hooks.on_message) hooks.on_message(text);
  };
  for (const auto& m : probe_messages_) message(m);

  std::optional<HostSampler> host;
  if (options_.host) host.emplace();

  std::thread pcie_thread;
  pcie_stop_ = false;
  if (options_.pcie) pcie_thread = std::thread([this] { pcie_loop(); });

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto interval = std::chrono::duration_cast<Clock::duration>(options_.interval);
  const double interval_s = std::chrono::duration<double>(options_.interval).count();
  std::vector<GpuSample> samples;
  samples.reserve(states_.size());

  std::uint64_t sequence = 0;
  while (true) {
    if (options_.duration_s && static_cast<double>(sequence) * interval_s >= *options_.duration_s - 1e-9) break;
    const auto deadline = start + interval * static_cast<Clock::rep>(sequence);
    std::this_thread::sleep_until(deadline);
    if (stop_requested_ || (hooks.should_stop && hooks.should_stop())) break;
    // Woken (or done with the previous tick) a whole interval or more late: the deadlines
    // already past are missed and counted; only the latest due one is sampled, never one twice.
    if (const auto late = Clock::now() - deadline; late >= interval) {
      const auto behind = static_cast<std::uint64_t>(late / interval);
      stats_.missed_ticks += behind;
      sequence += behind;
      if (options_.duration_s && static_cast<double>(sequence) * interval_s >= *options_.duration_s - 1e-9) break;
    }

    const double unix_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    const double elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
    MetricValues host_values = empty_metric_values();
    if (host) host->sample(host_values);

    samples.clear();
    for (std::size_t slot = 0; slot < states_.size(); ++slot) {
      GpuState& s = states_[slot];
      if (s.lost) continue;
      GpuSample sample{slot, empty_metric_values()};
      for (NvmlQuery q : kTickQueries) {
        if (!s.supported[idx(q)]) continue;
        const ReadResult r = nvml_.read(s.nvml_index, q, sample.values);
        if (r.status == ReadStatus::kOk) continue;
        if (r.status == ReadStatus::kGpuLost) {
          s.lost = true;
          std::string error = fmt::format("{} lost at {:.1f} s (tick {}): {}", describe(gpus_[slot]), elapsed_s,
                                          sequence, nvml_.error_string(r.nvml_code));
          stats_.errors.push_back(error);
          message("error: " + error);
          break;
        }
        if (r.status == ReadStatus::kNotSupported) {
          s.supported[idx(q)] = false;  // absent from now on, said once
          message(fmt::format("GPU {}: {} stopped answering (not supported); {} absent from now on",
                              s.nvml_index, to_string(q), tags_of(q)));
          continue;
        }
        ++stats_.failed_reads;
        if (!s.failure_reported[idx(q)]) {
          s.failure_reported[idx(q)] = true;
          message(fmt::format("GPU {}: {} failed: {} (cell left empty; further failures counted)", s.nvml_index,
                              to_string(q), nvml_.error_string(r.nvml_code)));
        }
      }
      if (s.lost) continue;
      if (options_.pcie) {
        std::lock_guard lock(pcie_mutex_);
        sample.values[idx(Metric::kPcieTx)] = s.pcie_tx_bps;
        sample.values[idx(Metric::kPcieRx)] = s.pcie_rx_bps;
      }
      if (host) {
        sample.values[idx(Metric::kHostCpuUtil)] = host_values[idx(Metric::kHostCpuUtil)];
        sample.values[idx(Metric::kHostMemUsed)] = host_values[idx(Metric::kHostMemUsed)];
      }
      samples.push_back(sample);
    }
    if (samples.empty()) break;  // every GPU lost: the trace so far is kept by the caller
    ++stats_.ticks;
    if (hooks.on_tick) hooks.on_tick(Tick{sequence, unix_s, elapsed_s, samples});

    ++sequence;
  }
  pcie_stop_ = true;
  if (pcie_thread.joinable()) pcie_thread.join();
}

HostSampler::HostSampler() {
  MetricValues ignored = empty_metric_values();
  sample(ignored);  // primes the CPU counters
}

void HostSampler::sample(MetricValues& out) {
  out[idx(Metric::kHostCpuUtil)] = kNaN;
  out[idx(Metric::kHostMemUsed)] = kNaN;
  if (std::ifstream stat("/proc/stat"); stat) {
    std::string cpu;
    std::uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    if (stat && cpu == "cpu") {
      const std::uint64_t total = user + nice + system + idle + iowait + irq + softirq + steal;
      const std::uint64_t busy = total - idle - iowait;
      if (last_total_ != 0 && total > last_total_)
        out[idx(Metric::kHostCpuUtil)] =
            100.0 * static_cast<double>(busy - last_busy_) / static_cast<double>(total - last_total_);
      last_busy_ = busy;
      last_total_ = total;
    }
  }
  if (std::ifstream meminfo("/proc/meminfo"); meminfo) {
    std::string key;
    std::uint64_t value_kib = 0, total_kib = 0, available_kib = 0;
    std::string unit;
    while (meminfo >> key >> value_kib) {
      std::getline(meminfo, unit);
      if (key == "MemTotal:") total_kib = value_kib;
      if (key == "MemAvailable:") available_kib = value_kib;
      if (total_kib && available_kib) break;
    }
    if (total_kib && available_kib)
      out[idx(Metric::kHostMemUsed)] = static_cast<double>(total_kib - available_kib) / 1024.0;
  }
}

}  // namespace epochcast
