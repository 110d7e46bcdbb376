#include "eval/fleet.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <limits>
#include <random>

#include "epochcast/core/metric.hpp"

namespace epochcast {

namespace {

constexpr std::array<Metric, 5> kMetrics{Metric::kGpuUtil, Metric::kMemUtil, Metric::kPower, Metric::kSmClock,
                                         Metric::kMemUsed};
// What an idle GPU reads: dcgm-exporter's 0 % and an idle H100's draw and clocks.
constexpr std::array<double, 5> kIdle{0, 0, 60, 345, 400};

std::string escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::vector<FleetJobTruth> write_fleet_openmetrics(const std::vector<FleetGpuSpec>& gpus, double start_unix_s,
                                                   double duration_s, std::ostream& out, double skew_s) {
  struct Timeline {
    std::vector<std::array<double, 5>> values;
    std::vector<int> job;  // -1: idle (no job labels)
  };
  std::vector<Timeline> lines(gpus.size());
  std::vector<FleetJobTruth> truth;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 1);
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const FleetGpuSpec& gpu = gpus[g];
    const auto n = static_cast<std::size_t>(duration_s / gpu.scrape_s);
    Timeline& tl = lines[g];
    tl.values.resize(n);
    tl.job.assign(n, -1);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t m = 0; m < kMetrics.size(); ++m)
        tl.values[i][m] = m == 2 ? kIdle[m] + noise(rng) : kIdle[m];
    for (std::size_t j = 0; j < gpu.jobs.size(); ++j) {
      const FleetJobSpec& job = gpu.jobs[j];
      SyntheticSpec spec = job.spec;
      spec.interval_s = gpu.scrape_s;
      spec.start_unix_s = start_unix_s + job.start_s;
      const SyntheticTrace st = make_synthetic_trace(spec, job.seed);
      FleetJobTruth& t = truth.emplace_back();
      t.uuid = gpu.uuid;
      t.labels = job.labels;
      t.start_unix_s = st.trace.start_unix_s;
      t.end_unix_s = st.trace.start_unix_s + st.trace.duration_s();
      t.period_s = st.truth.period_s;
      t.has_signature = st.truth.has_signature;
      for (std::size_t k = 0; k < st.trace.size(); ++k) {
        const double at = st.trace.start_unix_s + st.trace.time_s[k] - start_unix_s;
        const auto i = static_cast<std::size_t>(std::llround(at / gpu.scrape_s));
        if (at < 0 || i >= n) continue;
        tl.job[i] = static_cast<int>(j);
        for (std::size_t m = 0; m < kMetrics.size(); ++m)
          if (const Channel* ch = st.trace.find(kMetrics[m]); ch && std::isfinite(ch->values[k]))
            tl.values[i][m] = ch->values[k];
      }
    }
  }
  for (std::size_t m = 0; m < kMetrics.size(); ++m) {
    const MetricInfo& info = epochcast::info(kMetrics[m]);
    out << "# TYPE " << info.dcgm_name << " gauge\n";
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      const FleetGpuSpec& gpu = gpus[g];
      const std::string base = fmt::format("gpu=\"{}\",UUID=\"{}\",device=\"nvidia{}\",modelName=\"{}\",Hostname=\"{}\"",
                                           escape(gpu.gpu), escape(gpu.uuid), escape(gpu.gpu), escape(gpu.model_name),
                                           escape(gpu.hostname));
      std::vector<std::string> label_text(gpu.jobs.size());
      for (std::size_t j = 0; j < gpu.jobs.size(); ++j) {
        label_text[j] = base;
        for (const auto& [k, v] : gpu.jobs[j].labels) label_text[j] += fmt::format(",{}=\"{}\"", k, escape(v));
      }
      const Timeline& tl = lines[g];
      const double shift = m == 0 ? 0 : skew_s;
      for (std::size_t i = 0; i < tl.values.size(); ++i) {
        const double at = static_cast<double>(i) * gpu.scrape_s;
        bool silent = false;
        for (const auto& [from, to] : gpu.silent) silent |= at >= from && at < to;
        if (silent) continue;
        const double t = start_unix_s + at + shift;
        const double v = tl.values[i][m];
        out << info.dcgm_name << '{' << (tl.job[i] < 0 ? base : label_text[static_cast<std::size_t>(tl.job[i])]) << "} ";
        if (std::isfinite(v)) out << fmt::format("{:.6g}", v);
        else out << "NaN";
        out << fmt::format(" {:.3f}\n", t);
      }
    }
  }
  out << "# EOF\n";
  return truth;
}

}  // namespace epochcast
