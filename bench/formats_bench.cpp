// Reading speed of every format reader of issue 19 beside the nvidia-smi CSV reader, on ~64 MB
// of each format in memory (parsing and building the Trace, no disk). The inputs cycle the rows of
// the samples in tests/data/formats/ (the real resnet50 run in each tool's shape) with the time
// rewritten to keep increasing. Target: >= 100 MB/s on one core for each.
#include <benchmark/benchmark.h>
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>
#include <zlib.h>

#include "epochcast/trace/read.hpp"

namespace {

constexpr std::size_t kTargetBytes = 64u << 20;  // large enough that start-up costs vanish
constexpr double kStart = 1796052537.7;          // the run's first sample, Unix s

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

const std::string kDir = std::string(EPOCHCAST_TEST_DATA) + "/formats/";

std::string stamp(double unix_s, const char* fmt_spec) {
  const auto t = std::chrono::sys_time<std::chrono::milliseconds>(std::chrono::milliseconds(static_cast<long long>(unix_s * 1000)));
  return fmt::format(fmt::runtime(fmt_spec), t);
}

// Header lines, then data lines cycled with `row(i, line)` rewriting each until kTargetBytes.
std::string cycle(const std::vector<std::string>& header, const std::vector<std::string>& rows,
                  const std::function<std::string(std::size_t, const std::string&)>& row) {
  std::string out;
  out.reserve(kTargetBytes + (1 << 20));
  for (const auto& h : header) out += h + '\n';
  for (std::size_t i = 0; out.size() < kTargetBytes; ++i) {
    out += row(i, rows[i % rows.size()]);
    out += '\n';
  }
  return out;
}

std::string after_comma(const std::string& s, int n) {
  std::size_t p = 0;
  for (int k = 0; k < n; ++k) p = s.find(',', p) + 1;
  return s.substr(p);
}

std::string smi_csv() {
  auto lines = split_lines(slurp(std::string(EPOCHCAST_TEST_DATA) + "/h200/resnet50_224_bs256_bf16.smi.csv"));
  const std::vector<std::string> header{lines[0]};
  lines.erase(lines.begin());
  return cycle(header, lines, [](std::size_t i, const std::string& l) {
    return stamp(kStart + 0.1 * static_cast<double>(i), "{:%Y/%m/%d %H:%M:%S}") + "," + after_comma(l, 1);
  });
}

std::string dmon_plain() {
  auto lines = split_lines(slurp(kDir + "two_gpus.smi-dmon.log"));
  std::vector<std::string> rows;
  for (const auto& l : lines)
    if (l[0] != '#') rows.push_back(l);
  return cycle({lines[0], lines[1]}, rows, [](std::size_t, const std::string& l) { return l; });
}

std::string dmon_dt() {
  auto lines = split_lines(slurp(kDir + "pucm_dt.smi-dmon.log"));
  std::vector<std::string> rows;
  for (const auto& l : lines)
    if (l[0] != '#') rows.push_back(l.substr(22));  // after " YYYYMMDD   HH:MM:SS  "
  return cycle({lines[0], lines[1]}, rows, [](std::size_t i, const std::string& l) {
    return stamp(kStart + static_cast<double>(i), " {:%Y%m%d   %H:%M:%S}").substr(0, 20) + "  " + l;
  });
}

std::string exposition() {
  // one scrape block (without its timestamp line), repeated with the time advancing
  std::string gz = slurp(kDir + "scrapes.metrics.txt.gz");
  z_stream z{};
  inflateInit2(&z, 15 + 16);
  std::string text(16u << 20, '\0');
  z.next_in = reinterpret_cast<Bytef*>(gz.data());
  z.avail_in = static_cast<uInt>(gz.size());
  z.next_out = reinterpret_cast<Bytef*>(text.data());
  z.avail_out = static_cast<uInt>(text.size());
  inflate(&z, Z_FINISH);
  text.resize(z.total_out);
  inflateEnd(&z);
  const std::size_t first = text.find('\n') + 1, second = text.find("\n1796", first) + 1;
  const std::string block = text.substr(first, second - first);
  std::string out;
  out.reserve(kTargetBytes + (1 << 20));
  for (std::size_t i = 0; out.size() < kTargetBytes; ++i) {
    out += fmt::format("{:.3f}\n", kStart + 0.1 * static_cast<double>(i));
    out += block;
  }
  return out;
}

std::string query_range_json() {
  // 16 series (8 metrics x 2 GPUs) of the run's values, long enough for ~64 MB
  const std::size_t points = kTargetBytes / 16 / 24;
  std::string out = R"({"status":"success","data":{"resultType":"matrix","result":[)";
  // each metric's values in the run's range (base + k % spread): no reading outside its limits
  const struct {
    const char* name;
    int base, spread;
  } metrics[] = {{"DCGM_FI_DEV_SM_CLOCK", 1965, 16},   {"DCGM_FI_DEV_MEM_CLOCK", 3201, 1}, {"DCGM_FI_DEV_GPU_TEMP", 47, 19},
                 {"DCGM_FI_DEV_POWER_USAGE", 128, 530}, {"DCGM_FI_DEV_GPU_UTIL", 0, 101},   {"DCGM_FI_DEV_MEM_COPY_UTIL", 0, 68},
                 {"DCGM_FI_DEV_FB_FREE", 129422, 12587}, {"DCGM_FI_DEV_FB_USED", 1149, 12587}};
  bool first = true;
  for (const auto& m : metrics)
    for (int g = 0; g < 2; ++g) {
      out += fmt::format(R"({}{{"metric":{{"__name__":"{}","gpu":"{}","UUID":"GPU-{}","modelName":"NVIDIA H200"}},"values":[)",
                         first ? "" : ",", m.name, g, g);
      first = false;
      for (std::size_t k = 0; k < points; ++k)
        out += fmt::format(R"({}[{:.3f},"{}"])", k ? "," : "", kStart + 0.1 * static_cast<double>(k),
                           m.base + static_cast<int>(k % static_cast<std::size_t>(m.spread)));
      out += "]}";
    }
  out += "]}}";
  return out;
}

std::string wide_first_column(const std::string& file, const char* spec, int rows_per_time) {
  auto lines = split_lines(slurp(kDir + file));
  const std::string header = lines[0];
  lines.erase(lines.begin());
  return cycle({header}, lines, [spec, rows_per_time](std::size_t i, const std::string& l) {
    return stamp(kStart + 0.1 * static_cast<double>(i / static_cast<std::size_t>(rows_per_time)), spec) + "," + after_comma(l, 1);
  });
}

std::string wandb() {
  auto lines = split_lines(slurp(kDir + "wandb_system.csv"));
  const std::string header = lines[0];
  lines.erase(lines.begin());
  return cycle({header}, lines, [](std::size_t i, const std::string& l) {
    // columns 13, 14 are _runtime, _timestamp
    std::size_t a = 0;
    for (int k = 0; k < 13; ++k) a = l.find(',', a) + 1;
    const std::size_t b = l.find(',', l.find(',', a) + 1);
    const double t = 0.1 * static_cast<double>(i);
    return l.substr(0, a) + fmt::format("{:.4f},{:.6f}", t + 2.1, kStart + t) + l.substr(b);
  });
}

std::string mlflow() {
  auto lines = split_lines(slurp(kDir + "mlflow_history.csv"));
  std::vector<std::string> keys;
  std::map<std::string, std::vector<std::string>> values;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string key = lines[i].substr(0, lines[i].find(','));
    if (key.rfind("system/", 0) != 0) continue;
    if (!values.count(key)) keys.push_back(key);
    values[key].push_back(after_comma(lines[i], 1).substr(0, after_comma(lines[i], 1).find(',')));
  }
  std::string out = "key,value,timestamp,step\n";
  out.reserve(kTargetBytes + (1 << 20));
  const auto t0 = static_cast<long long>(kStart * 1000);
  for (std::size_t i = 0; out.size() < kTargetBytes; ++i)
    for (const auto& k : keys) {
      const auto& v = values[k];
      fmt::format_to(std::back_inserter(out), "{},{},{},{}\n", k, v[i % v.size()], t0 + 100 * static_cast<long long>(i), i);
    }
  return out;
}

void read_bench(benchmark::State& state, const std::string& content, const char* name, double interval_s) {
  epochcast::ReadOptions o;
  if (interval_s > 0) o.interval_s = interval_s;
  std::size_t rows = 0;
  for (auto _ : state) {
    const epochcast::Trace t = epochcast::read_trace_from_string(content, name, o);
    rows = t.size();
    benchmark::DoNotOptimize(t.time_s.data());
  }
  if (rows < 1000) state.SkipWithError("too few rows read");
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(content.size()));
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["input_mb"] = static_cast<double>(content.size()) / 1e6;
}

#define FORMAT_BENCH(NAME, MAKE, FILE, INTERVAL)                           \
  void BM_##NAME(benchmark::State& state) {                                \
    static const std::string content = MAKE;                               \
    read_bench(state, content, FILE, INTERVAL);                            \
  }                                                                        \
  BENCHMARK(BM_##NAME)->Unit(benchmark::kMillisecond)->MinTime(1.0)

FORMAT_BENCH(NvidiaSmiCsv, smi_csv(), "x.smi.csv", 0);
FORMAT_BENCH(NvidiaSmiDmon, dmon_plain(), "x.dmon.log", 1.0);
FORMAT_BENCH(NvidiaSmiDmonDateTime, dmon_dt(), "x.dmon.log", 0);
FORMAT_BENCH(DcgmExporterScrapes, exposition(), "x.metrics.txt", 0);
FORMAT_BENCH(QueryRangeJson, query_range_json(), "x.json", 0);
FORMAT_BENCH(WideDcgmCsv, wide_first_column("wide.dcgm.csv", "{:%Y-%m-%dT%H:%M:%S}Z", 2), "x.csv", 0);
FORMAT_BENCH(GrafanaCsv, wide_first_column("grafana.csv", "{:%Y-%m-%d %H:%M:%S}", 1), "x.csv", 0);
FORMAT_BENCH(WandbCsv, wandb(), "x.csv", 0);
FORMAT_BENCH(MlflowCsv, mlflow(), "x.csv", 0);

}  // namespace

BENCHMARK_MAIN();
