// Physically impossible readings (utilisation 250 %, negative power, memory or temperature) are
// read as missing by every line reader, counted, and warned with file, line, field and value.
// Until 2026-12-01 they were read as given: `info` showed util max 250, detect used it.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "epochcast/core/error.hpp"
#include "epochcast/core/metric.hpp"
#include "epochcast/trace/read.hpp"

namespace epochcast {
namespace {

const std::string kData = EPOCHCAST_TEST_DATA;

const Channel& channel(const Trace& t, Metric m) {
  const Channel* c = t.find(m);
  if (!c) throw std::runtime_error("no channel " + std::string(info(m).tag));
  return *c;
}

std::string all_warnings(const Trace& t) {
  std::string s;
  for (const auto& w : t.diagnostics.warnings) s += w + "\n";
  return s;
}

bool has(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

TEST(ImpossibleValues, MetricTableLimitsPassRealReadingsAndRefuseImpossibleOnes) {
  for (const MetricInfo& row : metric_table()) {
    EXPECT_LE(row.min_value, row.max_value) << row.tag;
    EXPECT_TRUE(plausible(row.id, std::nan(""))) << row.tag << ": missing is not impossible";
    EXPECT_TRUE(plausible(row.id, 0)) << row.tag;  // idle GPU, P0, empty bitmask
    EXPECT_FALSE(plausible(row.id, -1)) << row.tag << ": no metric is negative";
  }
  // Real readings, generously: boosts past a 700 W TDP, a hot GPU, GDDR7 memory clocks,
  // a 288 GB card, a 2 TiB host.
  EXPECT_TRUE(plausible(Metric::kGpuUtil, 100));
  EXPECT_TRUE(plausible(Metric::kPower, 1400));
  EXPECT_TRUE(plausible(Metric::kTemperature, 110));
  EXPECT_TRUE(plausible(Metric::kMemClock, 14001));
  EXPECT_TRUE(plausible(Metric::kMemTotal, 288.0 * 1024));
  EXPECT_TRUE(plausible(Metric::kHostMemUsed, 2.0 * 1024 * 1024));
  EXPECT_TRUE(plausible(Metric::kEnergy, 1e15));  // a counter since driver load
  EXPECT_TRUE(plausible(Metric::kSmActive, 1));
  // Impossible ones.
  EXPECT_FALSE(plausible(Metric::kGpuUtil, 250));
  EXPECT_FALSE(plausible(Metric::kMemUtil, 100.5));
  EXPECT_FALSE(plausible(Metric::kHostCpuUtil, 800));  // top's per-core sum is not this metric
  EXPECT_FALSE(plausible(Metric::kPower, -5));
  EXPECT_FALSE(plausible(Metric::kPower, 1e6));
  EXPECT_FALSE(plausible(Metric::kTemperature, 1000));
  EXPECT_FALSE(plausible(Metric::kSmActive, 1.5));
  EXPECT_FALSE(plausible(Metric::kPstate, 40));
  EXPECT_EQ(describe_limits(Metric::kGpuUtil), "outside 0 to 100 %");
  EXPECT_EQ(describe_limits(Metric::kEnergy), "below 0 mJ");
}

constexpr std::string_view kSmiHeader =
    "timestamp, index, name, memory.used [MiB], power.draw [W], utilization.gpu [%], temperature.gpu\n";

std::string smi_row(int second, const std::string& mem, const std::string& power, const std::string& util,
                    const std::string& temp = "50") {
  return "2026/11/30 10:00:" + std::string(second < 10 ? "0" : "") + std::to_string(second) +
         ".000, 0, NVIDIA H200, " + mem + " MiB, " + power + " W, " + util + " %, " + temp + "\n";
}

TEST(ImpossibleValues, NvidiaSmiCellsAreMissingCountedAndWarnedWithTheirPlace) {
  std::string log(kSmiHeader);
  log += smi_row(0, "1000", "300.5", "40");
  log += smi_row(1, "1000", "-12.5", "250");   // line 3: both impossible
  log += smi_row(2, "1000", "310.0", "101");   // line 4
  log += smi_row(3, "-1", "320.0", "60", "-40");  // line 5
  log += smi_row(4, "1000", "1400.0", "100", "105");  // a boost and a hot GPU: possible
  const Trace t = read_trace_from_string(log, "util.smi.csv");
  ASSERT_EQ(t.size(), 5u);
  const auto& util = channel(t, Metric::kGpuUtil).values;
  EXPECT_EQ(util[0], 40);
  EXPECT_TRUE(std::isnan(util[1]));
  EXPECT_TRUE(std::isnan(util[2]));
  EXPECT_EQ(util[4], 100);
  EXPECT_TRUE(std::isnan(channel(t, Metric::kPower).values[1]));
  EXPECT_EQ(channel(t, Metric::kPower).values[4], 1400);
  EXPECT_TRUE(std::isnan(channel(t, Metric::kMemUsed).values[3]));
  EXPECT_TRUE(std::isnan(channel(t, Metric::kTemperature).values[3]));
  EXPECT_EQ(channel(t, Metric::kTemperature).values[4], 105);
  EXPECT_EQ(t.diagnostics.impossible_values, 5u);
  EXPECT_EQ(t.diagnostics.rows_read, 5u);
  EXPECT_EQ(t.diagnostics.rows_skipped, 0u);  // the rows stay; only the cells are missing
  const std::string w = all_warnings(t);
  EXPECT_TRUE(has(w, "util.smi.csv: 2 impossible gpu_util_pct value(s) (outside 0 to 100 %) read as missing; "
                     "the first at line 3, field 'utilization.gpu [%]': '250 %'"))
      << w;
  EXPECT_TRUE(has(w, "util.smi.csv: 1 impossible power_w value(s) (outside 0 to 5000 W) read as missing; "
                     "the first at line 3, field 'power.draw [W]': '-12.5 W'"))
      << w;
  EXPECT_TRUE(has(w, "line 5, field 'memory.used [MiB]': '-1 MiB'")) << w;
  EXPECT_TRUE(has(w, "line 5, field 'temperature.gpu': '-40'")) << w;
  EXPECT_FALSE(has(w, "missing value(s)")) << w;  // no [N/A] in this log: not counted twice
}

TEST(ImpossibleValues, ChannelOfOnlyImpossibleValuesIsMissingWithTheReason) {
  std::string log(kSmiHeader);
  for (int s = 0; s < 6; ++s) log += smi_row(s, "1000", "300", std::to_string(200 + s));
  const Trace t = read_trace_from_string(log, "allbad.smi.csv");
  for (double v : channel(t, Metric::kGpuUtil).values) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(t.diagnostics.impossible_values, 6u);
  EXPECT_TRUE(has(all_warnings(t), "6 impossible gpu_util_pct value(s) (outside 0 to 100 %) read as missing; the first "
                                   "at line 2, field 'utilization.gpu [%]': '200 %'; the channel gpu_util_pct is "
                                   "missing: none of its values is possible"))
      << all_warnings(t);
}

TEST(ImpossibleValues, UnitsAreConvertedBeforeTheCheck) {
  // 0.25 kW is 250 W (possible); 95000 mW is 95 W; a ratio written in % is fine up to 100 %.
  const std::string log =
      "timestamp, power.draw, utilization.gpu\n"
      "2026/11/30 10:00:00.000, 0.25 kW, 95 %\n"
      "2026/11/30 10:00:01.000, 95000 mW, 100 %\n";
  const Trace t = read_trace_from_string(log, "units.smi.csv");
  EXPECT_EQ(t.diagnostics.impossible_values, 0u);
  EXPECT_EQ(channel(t, Metric::kPower).values[0], 250);
}

TEST(ImpossibleValues, OnlyTheChosenGpusValuesAreCounted) {
  // GPU 1's 250 % is not in the trace read with --gpu 0, so it is not reported; with --gpu 1 it is.
  std::string log(kSmiHeader);
  for (int s = 0; s < 4; ++s) {
    log += smi_row(s, "1000", "300", "50");
    std::string other = smi_row(s, "1000", "300", s == 2 ? "250" : "10");
    other.replace(other.find(", 0, "), 5, ", 1, ");
    log += other;
  }
  ReadOptions gpu0;
  gpu0.gpu = 0;
  const Trace t0 = read_trace_from_string(log, "two.smi.csv", gpu0);
  EXPECT_EQ(t0.diagnostics.impossible_values, 0u);
  ReadOptions gpu1;
  gpu1.gpu = 1;
  const Trace t1 = read_trace_from_string(log, "two.smi.csv", gpu1);
  EXPECT_EQ(t1.diagnostics.impossible_values, 1u);
  EXPECT_TRUE(has(all_warnings(t1), "the first at line 7, field 'utilization.gpu [%]': '250 %'")) << all_warnings(t1);
  // The busiest GPU is chosen on possible values: GPU 0 (mean 50; GPU 1's 10 % was 70 % with the 250).
  const Trace busiest = read_trace_from_string(log, "two.smi.csv");
  EXPECT_EQ(busiest.gpu.index, 0);
}

TEST(ImpossibleValues, DcgmiCellsAreMissingWithLineAndField) {
  const std::string log =
      "#Entity   GPUTL  POWER  TMPTR\n"
      "ID                W      C\n"
      "GPU 0     50     300    50\n"
      "GPU 0     250    -5     50\n"
      "GPU 0     60     310    51\n";
  ReadOptions o;
  o.interval_s = 0.1;
  const Trace t = read_trace_from_string(log, "d.dmon.log", o);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_TRUE(std::isnan(channel(t, Metric::kGpuUtil).values[1]));
  EXPECT_TRUE(std::isnan(channel(t, Metric::kPower).values[1]));
  EXPECT_EQ(t.diagnostics.impossible_values, 2u);
  const std::string w = all_warnings(t);
  EXPECT_TRUE(has(w, "d.dmon.log: 1 impossible gpu_util_pct value(s) (outside 0 to 100 %) read as missing; the first "
                     "at line 4, field 'GPUTL': '250'"))
      << w;
  EXPECT_TRUE(has(w, "the first at line 4, field 'POWER': '-5'")) << w;
}

TEST(ImpossibleValues, CanonicalAndHostCsvCellsAreMissingToo) {
  const std::string csv =
      "# epochcast-trace v1\n"
      "timestamp,gpu_util_pct,power_w,sm_active_ratio\n"
      "2026-11-30T10:00:00.000Z,50,300,0.5\n"
      "2026-11-30T10:00:01.000Z,50,300,1.7\n"
      "2026-11-30T10:00:02.000Z,-3,300,0.5\n";
  const Trace t = read_trace_from_string(csv, "c.csv");
  EXPECT_TRUE(std::isnan(channel(t, Metric::kSmActive).values[1]));
  EXPECT_TRUE(std::isnan(channel(t, Metric::kGpuUtil).values[2]));
  EXPECT_EQ(t.diagnostics.impossible_values, 2u);
  EXPECT_TRUE(has(all_warnings(t), "c.csv: 1 impossible sm_active_ratio value(s) (outside 0 to 1 ratio) read as "
                                   "missing; the first at line 4, field 'sm_active_ratio': '1.7'"))
      << all_warnings(t);

  // A host CSV merged onto a GPU trace: its count joins the trace's, its warning names it.
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "impossible_host";
  std::filesystem::create_directories(dir);
  const std::string gpu = (dir / "g.csv").string(), host = (dir / "g.host.csv").string();
  {
    std::ofstream(gpu) << "# epochcast-trace v1\ntimestamp,gpu_util_pct\n"
                          "2026-11-30T10:00:00.000Z,50\n2026-11-30T10:00:01.000Z,50\n2026-11-30T10:00:02.000Z,50\n";
    std::ofstream(host) << "timestamp,cpu_util_pct,mem_used_mib\n"
                           "2026-11-30T10:00:00.000Z,20,5000\n2026-11-30T10:00:01.000Z,800,5000\n"
                           "2026-11-30T10:00:02.000Z,20,5000\n";
  }
  ReadOptions o;
  o.host_path = host;
  const Trace merged = read_trace(gpu, o);
  EXPECT_TRUE(std::isnan(channel(merged, Metric::kHostCpuUtil).values[1]));
  EXPECT_EQ(merged.diagnostics.impossible_values, 1u);
  EXPECT_TRUE(has(all_warnings(merged), "host CSV: " + host + ": 1 impossible host_cpu_util_pct value(s) (outside 0 "
                                        "to 100 %) read as missing; the first at line 3, field 'cpu_util_pct': '800'"))
      << all_warnings(merged);
}

TEST(ImpossibleValues, FollowedFileReportsThemAsRowsArrive) {
  IncrementalTraceReader reader("f.smi.csv");
  std::string log(kSmiHeader);
  log += smi_row(0, "1000", "300", "50");
  log += smi_row(1, "1000", "300", "250");
  (void)reader.feed(log);
  EXPECT_EQ(reader.trace().diagnostics.impossible_values, 1u);
  EXPECT_TRUE(std::isnan(channel(reader.trace(), Metric::kGpuUtil).values[1]));
}

// The crafted sample (also a fuzzing seed): three impossible cells, each named.
TEST(ImpossibleValues, CraftedSampleFile) {
  const Trace t = read_trace(kData + "/bad/impossible_values.smi.csv");
  EXPECT_EQ(t.size(), 29u);
  EXPECT_EQ(t.diagnostics.impossible_values, 3u);
  const std::string w = all_warnings(t);
  EXPECT_TRUE(has(w, "the first at line 6, field 'utilization.gpu [%]': '250 %'")) << w;
  EXPECT_TRUE(has(w, "the first at line 10, field 'power.draw [W]': '-128.04 W'")) << w;
  EXPECT_TRUE(has(w, "the first at line 13, field 'temperature.gpu': '-40'")) << w;
}

// The real traces and samples hold no impossible reading: the rule changes nothing for them.
TEST(ImpossibleValues, RealTracesAndSamplesHaveNone) {
  int files = 0;
  for (const char* sub : {"h200", "dcgmi", "prometheus"})
    for (const auto& e : std::filesystem::directory_iterator(kData + "/" + sub)) {
      const std::string p = e.path().string();
      if (p.ends_with(".json") || p.ends_with(".md")) continue;
      const Trace t = read_trace(p);
      EXPECT_EQ(t.diagnostics.impossible_values, 0u) << p << "\n" << all_warnings(t);
      ++files;
    }
  EXPECT_EQ(files, 15);  // six nvidia-smi logs, six host logs, one dcgmi log, two Prometheus read-backs
}

// Review round 6, other hostile bytes. A log with classic Mac OS line ends (CR only) was
// "binary data (byte 0x0d); not a text trace".
TEST(HostileTraceBytes, CrOnlyLineEndsAreNamed) {
  std::string log(kSmiHeader);
  log += smi_row(0, "1000", "300", "50");
  log += smi_row(1, "1000", "300", "60");
  for (char& c : log)
    if (c == '\n') c = '\r';
  try {
    (void)read_trace_from_string(log, "mac.smi.csv");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().line, 1u);
    EXPECT_EQ(e.where().column, kSmiHeader.size());  // the first CR
    EXPECT_NE(e.detail().find("a carriage return inside a line: CR-only line ends (classic Mac OS)?"),
              std::string::npos)
        << e.what();
  }
  // CRLF is fine, as before.
  std::string crlf;
  for (char c : std::string(kSmiHeader) + smi_row(0, "1000", "300", "50") + smi_row(1, "1000", "300", "60")) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  EXPECT_EQ(read_trace_from_string(crlf, "crlf.smi.csv").size(), 2u);
}

// "-0" is a possible reading (0), but `info` showed a minimum of "-0".
TEST(HostileTraceBytes, NegativeZeroIsZero) {
  std::string log(kSmiHeader);
  log += smi_row(0, "1000", "-0", "-0");
  log += smi_row(1, "1000", "300", "60");
  const Trace t = read_trace_from_string(log, "z.smi.csv");
  EXPECT_EQ(t.diagnostics.impossible_values, 0u);
  EXPECT_FALSE(std::signbit(channel(t, Metric::kGpuUtil).values[0]));
  EXPECT_FALSE(std::signbit(channel(t, Metric::kPower).values[0]));
}

}  // namespace
}  // namespace epochcast
