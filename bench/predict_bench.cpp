// End-to-end `predict` on a generated 24-hour nvidia-smi log at 10 Hz (864,000 samples):
// wall time split by stage, peak memory, and the ratio to a raw-read floor (reading the same
// bytes and counting lines) measured side by side in every iteration, in wall time (x_raw_read)
// and in this thread's CPU time (x_raw_read_cpu: on the shared box the load swings wall times
// of both by 2-5x). The service (catalogs, the default model from its cache, or its fit when
// the cache has none) is loaded before the timed loop and timed apart (load_s): it is paid once
// per process, and a cache miss (a fit of minutes) must not count as predict's time.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <fmt/os.h>

#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "epochcast/service/render.hpp"
#include "epochcast/service/service.hpp"
#include "epochcast/trace/read.hpp"
#include "../src/epoch/surrogate_runner.hpp"

namespace {

namespace fs = std::filesystem;

constexpr double kIntervalS = 0.1;
// 24 h at 10 Hz; EPOCHCAST_BENCH_HOURS=H shortens it (callgrind, whose instruction counts do not
// swing with the shared box's load, runs ~50x slower).
const std::size_t kSamples = [] {
  const char* h = std::getenv("EPOCHCAST_BENCH_HOURS");
  const double hours = h && *h ? std::atof(h) : 24.0;
  return static_cast<std::size_t>(hours > 0 && hours <= 24 ? hours * 36000 : 864000);
}();
constexpr double kEpochS = 600;             // a 10-minute epoch: 144 epochs
constexpr double kValidationS = 40;         // validation pass at each epoch's end
constexpr double kWarmupS = 120;            // idle start-up before training

// A log shaped like the shared H200 traces (same header, units, timestamp format).
std::string generate_trace() {
  const fs::path path = fs::temp_directory_path() / fmt::format("epochcast-bench-{}-samples-10hz.smi.csv", kSamples);
  if (fs::exists(path) && fs::file_size(path) > kSamples * 100) return path.string();
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 1);
  auto out = fmt::output_file(path.string());
  out.print(
      "timestamp, index, name, clocks.current.graphics [MHz], clocks.current.sm [MHz], memory.free [MiB], "
      "memory.total [MiB], memory.used [MiB], power.draw [W], temperature.gpu, utilization.gpu [%], "
      "utilization.memory [%], clocks.current.memory [MHz], pstate, pcie.link.gen.current\n");
  const long long start_ms = 1'796'000'000'000LL;  // fixed start: reproducible file
  for (std::size_t i = 0; i < kSamples; ++i) {
    const double t = i * kIntervalS;
    const long long ms = start_ms + static_cast<long long>(std::llround(t * 1000)) + static_cast<long long>(noise(rng) * 3);
    const std::time_t secs = ms / 1000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    double util = 0, mem_util = 0, power = 120;
    if (t > kWarmupS) {
      const double phase = std::fmod(t - kWarmupS, kEpochS);
      const bool validating = phase > kEpochS - kValidationS;
      util = validating ? 70 + 5 * noise(rng) : 99 - std::abs(noise(rng));
      mem_util = validating ? 25 + 3 * noise(rng) : 48 + 2 * noise(rng);
      power = validating ? 420 + 15 * noise(rng) : 640 + 10 * noise(rng);
    }
    const double used = t > kWarmupS ? 6395 : 1391;
    out.print("{:04}/{:02}/{:02} {:02}:{:02}:{:02}.{:03}, 0, NVIDIA H200, 1980 MHz, 1980 MHz, {:.0f} MiB, 143771 MiB, "
              "{:.0f} MiB, {:.2f} W, {}, {:.0f} %, {:.0f} %, 3201 MHz, P0, 5\n",
              tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000,
              143771 - used, used, std::max(power, 60.0), 45 + static_cast<int>(t > kWarmupS) * 20,
              std::clamp(util, 0.0, 100.0), std::clamp(mem_util, 0.0, 100.0));
  }
  out.close();
  return path.string();
}

const std::string& trace_path() {
  static const std::string path = generate_trace();
  return path;
}

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double g_load_s = 0;

const epochcast::Service& service() {
  static const epochcast::Service s{};
  static const bool loaded = [] {
    const auto t0 = std::chrono::steady_clock::now();
    s.load();
    g_load_s = seconds(std::chrono::steady_clock::now() - t0);
    return true;
  }();
  (void)loaded;
  return s;
}

// Reading the bytes and counting lines: the floor any parser sits on.
std::size_t raw_read_lines(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return 0;
  static char buf[1 << 20];
  std::size_t lines = 0, n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    for (const char* p = buf; (p = static_cast<const char*>(std::memchr(p, '\n', buf + n - p))) != nullptr; ++p) ++lines;
  std::fclose(f);
  return lines;
}

// Peak resident set since the last reset (Linux: VmHWM, reset through clear_refs).
double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return NAN;
}
double current_rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return NAN;
}
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

void BM_PredictEndToEnd24h(benchmark::State& state) {
  const std::string& path = trace_path();
  const epochcast::Service& svc = service();
  epochcast::StageTimes total{};
  double raw_s = 0, html_s = 0, wall_s = 0, peak = 0, baseline = 0, raw_cpu_s = 0, cpu_s = 0;
  std::size_t predictions = 0;
  bool found = false;
  double period_s = 0;
  for (auto _ : state) {
    double c0 = thread_cpu_s();
    auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(raw_read_lines(path));
    raw_s += seconds(std::chrono::steady_clock::now() - t0);
    raw_cpu_s += thread_cpu_s() - c0;

    baseline = current_rss_mib();
    reset_peak_rss();
    epochcast::StageTimes times{};
    c0 = thread_cpu_s();
    t0 = std::chrono::steady_clock::now();
    const epochcast::Trace trace = epochcast::read_trace(path);
    times.read_s = seconds(std::chrono::steady_clock::now() - t0);
    const epochcast::PredictReport report = svc.predict(trace, {}, &times);
    const auto t1 = std::chrono::steady_clock::now();
    const std::string html = epochcast::render_html(report, trace);
    const std::string json = epochcast::to_json(report).dump();
    benchmark::DoNotOptimize(html.data());
    benchmark::DoNotOptimize(json.data());
    html_s += seconds(std::chrono::steady_clock::now() - t1);
    wall_s += seconds(std::chrono::steady_clock::now() - t0);
    cpu_s += thread_cpu_s() - c0;
    peak = std::max(peak, peak_rss_mib() - baseline);
    total.read_s += times.read_s;
    total.detect_s += times.detect_s;
    total.features_s += times.features_s;
    total.model_s += times.model_s;
    predictions = report.predictions.size();
    found = report.source.detected.found;
    period_s = report.source.detected.period_s;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["wall_s"] = wall_s / n;
  state.counters["read_s"] = total.read_s / n;
  state.counters["detect_s"] = total.detect_s / n;
  state.counters["features_s"] = total.features_s / n;
  state.counters["model_s"] = total.model_s / n;
  state.counters["render_s"] = html_s / n;
  state.counters["raw_read_s"] = raw_s / n;
  state.counters["x_raw_read"] = wall_s / raw_s;
  state.counters["cpu_s"] = cpu_s / n;
  state.counters["raw_read_cpu_s"] = raw_cpu_s / n;
  state.counters["x_raw_read_cpu"] = cpu_s / raw_cpu_s;
  state.counters["load_s"] = g_load_s;
  state.counters["peak_mib"] = peak;
  state.counters["samples_per_s"] = kSamples * n / wall_s;
  state.counters["gpus"] = static_cast<double>(predictions);
  state.counters["found"] = found;
  state.counters["period_s"] = period_s;
}
BENCHMARK(BM_PredictEndToEnd24h)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

// The service's fixed cost: one trace of the shared H200 set, for scale.
void BM_PredictSharedH200Trace(benchmark::State& state) {
  const std::string path = std::string(EPOCHCAST_TEST_DATA) + "/h200/vgg16_224_bs32_fp32.smi.csv";
  const epochcast::Service& svc = service();
  for (auto _ : state) benchmark::DoNotOptimize(svc.predict_file(epochcast::TraceRequest{.path = path}, {}).predictions.size());
}
BENCHMARK(BM_PredictSharedH200Trace)->Unit(benchmark::kMillisecond);

// The whole-region search's surrogates on the idle cores (src/epoch/surrogate_runner.hpp)
// against the same predict with every surrogate on the caller's thread (arg 0 = no helpers),
// side by side, in wall time (the point is latency on idle cores) and the process's CPU time.
// The answer is the same either way (RegionSearch.SameAnswerOnAnyNumberOfThreads). serve's
// load bench uploads this trace (bench/serve_load.py).
void BM_PredictResnet50Helpers(benchmark::State& state) {
  const std::string path = std::string(EPOCHCAST_TEST_DATA) + "/h200/resnet50_224_bs256_bf16.smi.csv";
  const epochcast::Service& svc = service();
  const std::size_t before = epochcast::detail::set_max_surrogate_helpers(
      state.range(0) == 0 ? 0 : std::max(1U, std::thread::hardware_concurrency()) - 1);
  timespec c0{}, c1{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
  for (auto _ : state) benchmark::DoNotOptimize(svc.predict_file(epochcast::TraceRequest{.path = path}, {}).predictions.size());
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
  state.counters["cpu_ms_per_predict"] =
      1e3 * ((c1.tv_sec - c0.tv_sec) + 1e-9 * (c1.tv_nsec - c0.tv_nsec)) / static_cast<double>(state.iterations());
  epochcast::detail::set_max_surrogate_helpers(before);
}
BENCHMARK(BM_PredictResnet50Helpers)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
