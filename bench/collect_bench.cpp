// The collector's own cost, isolated with the fake NVML (tests/fakes/libnvml_fake.so).
//
//   collect_bench                     Google Benchmark: per-tick cost in-process (bare NVML reads
//                                     = the reference, then reads + canonical CSV row), and the
//                                     whole `epochcast collect` process at 10 Hz and 100 Hz:
//                                     CPU time as a share of one core, peak RSS, and the tick
//                                     sequence of the written trace (missed / duplicated samples),
//                                     the sampler's own lateness statistics, the load average.
//                                     BM_Append*: one append() on a real file with the write+sync
//                                     inline (reference) or on the background thread (ours).
//   EPOCHCAST_BENCH_COLLECT_S=600 collect_bench --benchmark_filter=Process   the 10-minute check
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <cstdio>
#include <iostream>

#include "epochcast/collect/nvml.hpp"
#include "epochcast/collect/sampler.hpp"
#include "epochcast/collect/trace_file.hpp"
#include "epochcast/trace/read.hpp"

#if defined(EPOCHCAST_FAKE_NVML) && defined(EPOCHCAST_CLI)
#include "../tests/integration/collect_process.hpp"

namespace epochcast {
namespace {

const std::string kTrace = std::string(EPOCHCAST_TEST_DATA) + "/h200/resnet50_224_bs256_bf16.smi.csv";

void use_fake_nvml() {
  setenv("EPOCHCAST_NVML_LIBRARY", EPOCHCAST_FAKE_NVML, 1);
  setenv("EPOCHCAST_FAKE_NVML_TRACE", kTrace.c_str(), 1);
  setenv("EPOCHCAST_FAKE_NVML_LOOP", "1", 1);
}

constexpr NvmlQuery kTickQueries[] = {
    NvmlQuery::kUtilization, NvmlQuery::kMemory,   NvmlQuery::kPower,       NvmlQuery::kSmClock,
    NvmlQuery::kGraphicsClock, NvmlQuery::kMemClock, NvmlQuery::kTemperature, NvmlQuery::kEnergy,
    NvmlQuery::kClockEventReasons, NvmlQuery::kPstate, NvmlQuery::kPcieLinkGen};

// Reference: the NVML calls of one tick and nothing else.
void BM_TickBareNvmlReads(benchmark::State& state) {
  use_fake_nvml();
  Nvml nvml;
  MetricValues v = empty_metric_values();
  for (auto _ : state) {
    for (NvmlQuery q : kTickQueries) benchmark::DoNotOptimize(nvml.read(0, q, v));
  }
}
BENCHMARK(BM_TickBareNvmlReads);

// Ours: the same reads plus formatting and buffering the canonical CSV row.
void BM_TickReadsAndCsvRow(benchmark::State& state) {
  use_fake_nvml();
  Nvml nvml;
  Sampler sampler(nvml, {});
  const GpuIdentity gpu = sampler.gpus().front();
  TraceFileWriter writer("/dev/null", sampler.columns(), gpu);
  MetricValues v = empty_metric_values();
  double t = 1764515000.0;
  for (auto _ : state) {
    for (NvmlQuery q : kTickQueries) benchmark::DoNotOptimize(nvml.read(0, q, v));
    writer.append(t += 0.01, gpu, v);
  }
}
BENCHMARK(BM_TickReadsAndCsvRow);

// The cost an append() puts on the sampling thread, writing to a real file synced every
// `flush_ms`: the worst single append is what delays a tick.
void append_bench(benchmark::State& state, bool background) {
  use_fake_nvml();
  Nvml nvml;
  Sampler sampler(nvml, {});
  const GpuIdentity gpu = sampler.gpus().front();
  testing::TempDir dir("append-bench");
  TraceFileWriter writer((dir / "t.csv").string(), sampler.columns(), gpu,
                         std::chrono::milliseconds(state.range(0)));
  if (background) writer.flush_in_background();
  MetricValues v = empty_metric_values();
  for (NvmlQuery q : kTickQueries) nvml.read(0, q, v);
  double t = 1764515000.0, worst_s = 0;
  for (auto _ : state) {
    const auto started = std::chrono::steady_clock::now();
    writer.append(t += 0.01, gpu, v);
    worst_s = std::max(worst_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // ticks are spaced; let syncs happen between
  }
  writer.close();
  state.counters["worst_append_ms"] = worst_s * 1e3;
  state.counters["flushes"] = static_cast<double>(writer.flushes());
  state.counters["max_flush_ms"] = writer.max_flush_s() * 1e3;
}
void BM_AppendInlineFlush(benchmark::State& state) { append_bench(state, false); }
void BM_AppendBackgroundFlush(benchmark::State& state) { append_bench(state, true); }
BENCHMARK(BM_AppendInlineFlush)->Arg(20)->Iterations(5000)->UseRealTime();
BENCHMARK(BM_AppendBackgroundFlush)->Arg(20)->Iterations(5000)->UseRealTime();

double load_average_1min() {
  std::ifstream in("/proc/loadavg");
  double v = NAN;
  in >> v;
  return v;
}

// "# sampler: 60000 ticks, 0 missed (0 gaps), 3 late; lateness p50 0.06 ms, p99 1.2 ms, max 9.8 ms"
void parse_sampler_comment(const std::string& path, benchmark::State& state) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    double ticks = 0, missed = 0, gaps = 0, late = 0, p50 = 0, p99 = 0, max = 0;
    if (std::sscanf(line.c_str(), "# sampler: %lf ticks, %lf missed (%lf gap%*[s]), %lf late; lateness p50 %lf ms, p99 %lf ms, max %lf ms",
                    &ticks, &missed, &gaps, &late, &p50, &p99, &max) == 7) {
      state.counters["sampler_missed"] = missed;
      state.counters["sampler_gaps"] = gaps;
      state.counters["late_ticks"] = late;
      state.counters["lateness_p50_ms"] = p50;
      state.counters["lateness_p99_ms"] = p99;
      state.counters["lateness_max_ms"] = max;
    }
  }
}

// The whole `epochcast collect` process, as an operator runs it, for EPOCHCAST_BENCH_COLLECT_S seconds.
void BM_CollectProcess(benchmark::State& state) {
  const int interval_ms = static_cast<int>(state.range(0));
  const char* env_s = std::getenv("EPOCHCAST_BENCH_COLLECT_S");
  const double duration_s = env_s ? std::atof(env_s) : 30.0;
  testing::TempDir dir("collect-bench");
  const std::string out = (dir / "trace.csv").string();
  for (auto _ : state) {
    testing::Process p({EPOCHCAST_CLI, "collect", "-q", "-o", out, "--interval-ms", std::to_string(interval_ms),
                        "--duration", fmt::format("{}", duration_s)},
                       {{"EPOCHCAST_NVML_LIBRARY", EPOCHCAST_FAKE_NVML},
                        {"EPOCHCAST_FAKE_NVML_TRACE", kTrace},
                        {"EPOCHCAST_FAKE_NVML_LOOP", "1"}},
                       dir.path());
    const auto started = std::chrono::steady_clock::now();
    int raw = 0;
    rusage usage{};
    // Peak RSS from /proc (VmHWM restarts at exec; wait4's ru_maxrss also counts the spawn).
    double peak_rss_kb = 0, load_sum = 0, load_max = 0;
    int load_n = 0;
    while (wait4(p.pid(), &raw, WNOHANG, &usage) == 0) {
      const double load = load_average_1min();
      load_sum += load;
      load_max = std::max(load_max, load);
      ++load_n;
      std::ifstream status("/proc/" + std::to_string(p.pid()) + "/status");
      for (std::string line; std::getline(status, line);)
        if (line.starts_with("VmHWM:")) peak_rss_kb = std::max(peak_rss_kb, std::atof(line.c_str() + 6));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    p.reaped(WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw));
    if (!WIFEXITED(raw) || WEXITSTATUS(raw) != 0) {
      state.SkipWithError(("collect failed: " + p.err()).c_str());
      return;
    }
    const double cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    // The sequence check: one row per deadline, strictly increasing, spaced by the interval.
    const Trace t = read_trace(out);
    const auto expected = static_cast<std::size_t>(std::llround(duration_s * 1000.0 / interval_ms));
    std::size_t duplicated = 0, late = 0;
    const double interval_s = interval_ms / 1000.0;
    for (std::size_t i = 1; i < t.size(); ++i) {
      const double d = t.time_s[i] - t.time_s[i - 1];
      if (d <= 0) ++duplicated;
      if (d > 1.5 * interval_s) ++late;
    }
    parse_sampler_comment(out, state);
    state.counters["load1_mean"] = load_n ? load_sum / load_n : NAN;
    state.counters["load1_max"] = load_max;
    state.counters["cpu_pct_of_one_core"] = 100.0 * cpu_s / wall_s;
    state.counters["cpu_s"] = cpu_s;
    state.counters["wall_s"] = wall_s;
    state.counters["peak_rss_mb"] = peak_rss_kb / 1024.0;
    state.counters["rows"] = static_cast<double>(t.size());
    state.counters["rows_expected"] = static_cast<double>(expected);
    state.counters["missed"] = static_cast<double>(expected > t.size() ? expected - t.size() : 0);
    state.counters["duplicated"] = static_cast<double>(duplicated);
    state.counters["gaps_over_1.5x"] = static_cast<double>(late);
  }
}
BENCHMARK(BM_CollectProcess)->Arg(100)->Arg(10)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
}  // namespace epochcast

BENCHMARK_MAIN();
#else
int main() {
  std::cerr << "collect_bench needs the fake NVML and the CLI (configure with EPOCHCAST_TESTS=ON)\n";
  return 0;
}
#endif
