// nvidia-smi CSV parsing speed on a 1-million-row log shaped like the real H200 traces.
// The log is generated at start-up into a temporary file (or EPOCHCAST_BENCH_LOG, kept for
// bench/parse_compare.py, which times pandas on the same bytes in the same run).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "epochcast/trace/read.hpp"

namespace {

constexpr std::size_t kRows = 1'000'000;

// Cycles the data rows of a real trace, re-stamping them 100 ms apart across days.
std::string generate_log(const std::string& path) {
  std::ifstream in(std::string(EPOCHCAST_TEST_DATA) + "/h200/vgg16_224_bs32_fp32.smi.csv");
  std::string header, line;
  std::getline(in, header);
  std::vector<std::string> tails;  // each row after its timestamp: ", 0, NVIDIA H200, …"
  while (std::getline(in, line)) tails.push_back(line.substr(line.find(',')));
  if (tails.empty()) throw std::runtime_error("cannot read the real trace to shape the benchmark log");
  std::ofstream out(path, std::ios::binary);
  out << header << '\n';
  std::string buf;
  for (std::size_t i = 0; i < kRows; ++i) {
    const std::size_t ms = i * 100;
    const std::size_t s = ms / 1000, day = 1 + s / 86400, sod = s % 86400;
    fmt::format_to(std::back_inserter(buf), "2026/11/{:02} {:02}:{:02}:{:02}.{:03}{}\n", day, sod / 3600,
                   sod / 60 % 60, sod % 60, ms % 1000, tails[i % tails.size()]);
    if (buf.size() > (1 << 20)) {
      out << buf;
      buf.clear();
    }
  }
  out << buf;
  return path;
}

const std::string& log_path() {
  static const std::string path = [] {
    if (const char* keep = std::getenv("EPOCHCAST_BENCH_LOG")) {
      if (!std::filesystem::exists(keep)) generate_log(keep);
      return std::string(keep);
    }
    const auto p = std::filesystem::temp_directory_path() / fmt::format("epochcast_parse_bench_{}.csv", ::getpid());
    generate_log(p.string());
    std::atexit([] { std::filesystem::remove(std::filesystem::temp_directory_path() /
                                             fmt::format("epochcast_parse_bench_{}.csv", ::getpid())); });
    return p.string();
  }();
  return path;
}

// The whole reader: file streamed through the 1 MiB buffer, values parsed, Trace built.
void BM_ReadSmiCsvFile(benchmark::State& state) {
  const std::string& path = log_path();
  const auto bytes = static_cast<std::int64_t>(std::filesystem::file_size(path));
  std::size_t rows = 0;
  for (auto _ : state) {
    const epochcast::Trace t = epochcast::read_trace(path);
    rows = t.size();
    benchmark::DoNotOptimize(t.time_s.data());
  }
  if (rows != kRows) state.SkipWithError("row count mismatch");
  state.SetBytesProcessed(state.iterations() * bytes);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(rows));
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["file_mb"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_ReadSmiCsvFile)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// The same bytes from memory: parsing alone, without the kernel's read().
void BM_ReadSmiCsvMemory(benchmark::State& state) {
  std::ifstream in(log_path(), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string content = ss.str();
  for (auto _ : state) {
    const epochcast::Trace t = epochcast::read_trace_from_string(content, "bench.csv");
    benchmark::DoNotOptimize(t.time_s.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(content.size()));
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kRows));
}
BENCHMARK(BM_ReadSmiCsvMemory)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
