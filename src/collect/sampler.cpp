#include "epochcast/collect/sampler.hpp"
#include "epochcast/core/nan.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>
#include <time.h>

#include "epochcast/core/error.hpp"
#include "epochcast/collect/helper_thread.hpp"

namespace epochcast {

namespace {

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

std::vector<unsigned> collect::parse_gpu_list(std::string_view text) {
  std::vector<unsigned> out;
  if (text == "all") return out;
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, fmt::format("GPU list '{}': {}", text, why));
  };
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string_view item = text.substr(begin, end - begin);
    unsigned v = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || v > 1'000'000)
      throw bad("expected all, N or N,M,…");
    if (std::find(out.begin(), out.end(), v) != out.end()) throw bad(fmt::format("GPU {} is listed twice", v));
    out.push_back(v);
    begin = end + 1;
  }
  return out;
}

struct Sampler::GpuState {
  unsigned nvml_index = 0;
  std::array<bool, kNvmlQueryCount> supported{};
  std::array<bool, kNvmlQueryCount> failure_reported{};
  std::array<bool, kMetricCount> impossible_reported{};
  bool lost = false;
  double pcie_tx_bps = kNaN;  // latest from the PCIe thread (guarded by pcie_mutex_)
  double pcie_rx_bps = kNaN;
};

Sampler::Sampler(const Nvml& nvml, SamplerOptions options) : nvml_(nvml), options_(std::move(options)) {
  if (options_.interval.count() <= 0)
    throw Error(ErrorCode::kInvalidArgument, "sampling interval must be at least 1 ms");
  std::vector<unsigned> indices = options_.gpus;
  for (std::size_t i = 0; i < indices.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (indices[i] == indices[j])
        throw Error(ErrorCode::kInvalidArgument, fmt::format("GPU {} is selected twice", indices[i]));
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

namespace {

// Reads of one tick spreading over more than this (and 4x their median) are read again.
constexpr std::int64_t kSpreadFloorNs = 2'000'000;

std::int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Sleeps until the absolute monotonic time `at_ns` (no drift from relative sleeps); a signal
// wakes it early so that `stop` is seen at once.
template <typename Stop>
void sleep_until_ns(std::int64_t at_ns, Stop&& stop) {
  const timespec ts{static_cast<time_t>(at_ns / 1'000'000'000), static_cast<long>(at_ns % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR)
    if (stop()) return;
}

}  // namespace

void LatenessHistogram::add(double seconds) {
  if (!(seconds > 0)) seconds = 0;  // a tick read before its deadline (clock granularity) is on time
  ++count_;
  sum_s_ += seconds;
  max_s_ = std::max(max_s_, seconds);
  const double us = seconds * 1e6;
  std::size_t b = 0;
  if (us >= 1) {
    int exp = 0;
    const double frac = std::frexp(us, &exp);  // us = frac * 2^exp, frac in [0.5, 1)
    const int octave = std::min(exp - 1, kOctaves - 1);
    const int sub = std::min(kSubBuckets - 1, static_cast<int>((2 * frac - 1) * kSubBuckets));
    b = 1 + static_cast<std::size_t>(octave * kSubBuckets + (octave == exp - 1 ? sub : kSubBuckets - 1));
  }
  ++buckets_[b];
}

double LatenessHistogram::quantile(double q) const {
  if (count_ == 0) return 0;
  const auto rank = static_cast<std::uint64_t>(std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(count_)));
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    seen += buckets_[b];
    if (seen < std::max<std::uint64_t>(rank, 1)) continue;
    if (b == 0) return 0;
    const auto octave = static_cast<int>((b - 1) / kSubBuckets);
    const auto sub = static_cast<int>((b - 1) % kSubBuckets);
    const double mid_us = std::ldexp(1.0 + (sub + 0.5) / kSubBuckets, octave);  // bucket middle
    return std::min(mid_us / 1e6, max_s_);
  }
  return max_s_;
}

std::string describe_schedule(const SamplerStats& stats) {
  auto ms = [](double s) { return fmt::format("{:.3g} ms", s * 1e3); };
  std::string text = fmt::format(
      "{} ticks, {} missed ({} gap{}), {} late; lateness p50 {}, p99 {}, max {}; {} read again", stats.ticks,
      stats.missed_ticks, stats.gaps.size(), stats.gaps.size() == 1 ? "" : "s", stats.late_ticks,
      ms(stats.lateness.quantile(0.5)), ms(stats.lateness.quantile(0.99)), ms(stats.lateness.max_s()),
      stats.reread_ticks);
  if (stats.spread_ticks) text += fmt::format(", {} spread", stats.spread_ticks);
  return text;
}

void Sampler::run(const SamplerHooks& hooks) {
  auto message = [&](const std::string& text) {
    if (hooks.on_message) hooks.on_message(text);
  };
  for (const auto& m : probe_messages_) message(m);
  auto stopping = [&] { return stop_requested_ || (hooks.should_stop && hooks.should_stop()); };

  std::optional<HostSampler> host;
  if (options_.host) host.emplace();

  std::thread pcie_thread;
  pcie_stop_ = false;
  if (options_.pcie) pcie_thread = detail::helper_thread([this] { pcie_loop(); });

  const std::int64_t interval_ns = std::chrono::nanoseconds(options_.interval).count();
  // Catch-up reads stay this far apart: the trace's millisecond timestamps remain distinct.
  const std::int64_t min_spacing_ns = std::max<std::int64_t>(1'000'000, interval_ns / 4);
  const std::int64_t max_behind_ns = std::chrono::nanoseconds(options_.max_behind).count();
  const double interval_s = static_cast<double>(interval_ns) / 1e9;
  const std::int64_t start_ns = mono_ns();
  std::int64_t last_read_ns = start_ns - min_spacing_ns;
  std::vector<GpuSample> samples;
  samples.reserve(states_.size());

  auto finished = [&](std::uint64_t seq) {
    return options_.duration_s && static_cast<double>(seq) * interval_s >= *options_.duration_s - 1e-9;
  };
  std::uint64_t sequence = 0;
  while (!finished(sequence)) {
    std::int64_t deadline_ns = start_ns + interval_ns * static_cast<std::int64_t>(sequence);
    sleep_until_ns(std::max(deadline_ns, last_read_ns + min_spacing_ns), stopping);
    if (stopping()) break;
    std::int64_t now_ns = mono_ns();
    // Stopped (SIGSTOP, suspend) or starved past the bound: no burst of catch-up reads; the
    // deadlines up to the latest due one are one recorded gap, and the schedule continues
    // on the same grid from there.
    if (now_ns - deadline_ns > max_behind_ns) {
      const auto latest = static_cast<std::uint64_t>((now_ns - start_ns) / interval_ns);
      if (latest > sequence) {
        const SamplerGap gap{sequence, latest - sequence, static_cast<double>(now_ns - deadline_ns) / 1e9,
                             static_cast<double>(now_ns - start_ns) / 1e9};
        stats_.gaps.push_back(gap);
        stats_.missed_ticks += gap.ticks;
        message(fmt::format("gap: sampling woke {:.2f} s late at {:.1f} s; ticks {}..{} ({:.2f} s) not sampled",
                            gap.behind_s, gap.elapsed_s, gap.first_sequence, latest - 1,
                            static_cast<double>(gap.ticks) * interval_s));
        sequence = latest;
        if (finished(sequence)) break;
        deadline_ns = start_ns + interval_ns * static_cast<std::int64_t>(sequence);
      }
    }
    last_read_ns = now_ns;
    const double lateness_s = static_cast<double>(now_ns - deadline_ns) / 1e9;
    stats_.lateness.add(lateness_s);
    if (now_ns - deadline_ns >= interval_ns) ++stats_.late_ticks;

    // The row's timestamp is taken when its reads begin; reads whose span grew far past the
    // usual (the thread preempted between the stamp and a read: 46 ms once in ~43,000 rows
    // under load) would put values from two instants under one timestamp, so such a tick is
    // read once more, with a new timestamp. Bound: 4x the median span so far (a slow driver's
    // usual 33 ms is not a stall), at least kSpreadFloor. The kept read's failures and
    // impossible readings are counted, not the discarded one's.
    double unix_s = 0;
    double elapsed_s = 0;
    std::uint64_t failed_reads = 0;
    for (bool again = false;; again = true) {
      const std::int64_t read_begin_ns = again ? mono_ns() : now_ns;
      if (again) last_read_ns = read_begin_ns;
      unix_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      elapsed_s = static_cast<double>(read_begin_ns - start_ns) / 1e9;
      failed_reads = 0;
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
          ++failed_reads;
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
      const std::int64_t span_ns = mono_ns() - read_begin_ns;
      const auto usual_ns = static_cast<std::int64_t>(stats_.read_span.quantile(0.5) * 1e9);
      stats_.read_span.add(static_cast<double>(span_ns) / 1e9);
      if (span_ns <= std::max(kSpreadFloorNs, 4 * usual_ns) || samples.empty()) break;
      if (again) {
        ++stats_.spread_ticks;  // read twice, spread both times: kept as read
        break;
      }
      ++stats_.reread_ticks;
    }
    stats_.failed_reads += failed_reads;
    for (GpuSample& sample : samples) {
      GpuState& s = states_[sample.slot];
      // A reading outside the metric's physical limits (util 250 %, negative power) is missing,
      // as every trace reader has it: said once per GPU and metric, then counted.
      for (std::size_t k = 0; k < kMetricCount; ++k) {
        const auto m = static_cast<Metric>(k);
        const double v = sample.values[k];
        if (plausible(m, v)) continue;
        ++stats_.impossible_values;
        sample.values[k] = kNaN;
        if (!s.impossible_reported[k]) {
          s.impossible_reported[k] = true;
          message(fmt::format("GPU {}: impossible {} reading {:g} ({}) at tick {}; cell left empty (further ones counted)",
                              s.nvml_index, info(m).tag, v, describe_limits(m), sequence));
        }
      }
    }
    if (samples.empty()) break;  // every GPU lost: the trace so far is kept by the caller
    ++stats_.ticks;
    if (hooks.on_tick) hooks.on_tick(Tick{sequence, unix_s, elapsed_s, lateness_s, samples});

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
