// nvidia-smi CSV reader, host merge and canonical CSV round trip, on the real H200 traces
// and on small logs written in nvidia-smi's own shapes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "epochcast/core/error.hpp"
#include "epochcast/trace/read.hpp"

namespace epochcast {
namespace {

const std::string kData = EPOCHCAST_TEST_DATA;
const std::string kVgg = kData + "/h200/vgg16_224_bs32_fp32.smi.csv";
const std::string kVggHost = kData + "/h200/vgg16_224_bs32_fp32.host.csv";

constexpr std::string_view kSmiHeader =
    "timestamp, index, name, clocks.current.sm [MHz], memory.used [MiB], power.draw [W], "
    "utilization.gpu [%], pstate\n";

// The error reading `log` raises (a test failure, and an empty error, when it reads), as
// read_bad_input_test's read_error does for a file.
Error string_error(const std::string& log, const std::string& name, const ReadOptions& o = {}) {
  try {
    (void)read_trace_from_string(log, name, o);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << name << ": no error";
  return Error(ErrorCode::kInternal, "none");
}

TEST(ReadSmi, RealH200TraceHasEveryChannelInCanonicalUnits) {
  const Trace t = read_trace(kVgg);
  EXPECT_EQ(t.format, "nvidia-smi");
  EXPECT_EQ(t.gpu.name, "NVIDIA H200");
  EXPECT_EQ(t.gpu.index, 0);
  ASSERT_GT(t.size(), 200u);
  EXPECT_EQ(t.first_timestamp, "2026/11/30 15:22:53.672");
  // First row: 1980 MHz, 1391 MiB used, 125.34 W, 4 %, pstate P0, total 143771 MiB.
  EXPECT_DOUBLE_EQ(t.find(Metric::kSmClock)->values[0], 1980.0);
  EXPECT_DOUBLE_EQ(t.find(Metric::kMemUsed)->values[0], 1391.0);
  EXPECT_DOUBLE_EQ(t.find(Metric::kPower)->values[0], 125.34);
  EXPECT_DOUBLE_EQ(t.find(Metric::kGpuUtil)->values[0], 4.0);
  EXPECT_DOUBLE_EQ(t.find(Metric::kPstate)->values[0], 0.0);
  EXPECT_DOUBLE_EQ(t.find(Metric::kMemTotal)->values[0], 143771.0);
  EXPECT_DOUBLE_EQ(t.find(Metric::kTemperature)->values[0], 43.0);
  EXPECT_NEAR(t.time_s[1], 0.105, 1e-6);
  EXPECT_NEAR(t.median_interval_s(), 0.1, 0.01);
  EXPECT_EQ(t.channels.size(), 12u);
  EXPECT_EQ(t.diagnostics.rows_skipped, 0u);
  EXPECT_EQ(t.diagnostics.rows_read, t.size());
  // Local wall time resolved with this machine's TZ rules.
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 10;
  tm.tm_mday = 30;
  tm.tm_hour = 15;
  tm.tm_min = 22;
  tm.tm_sec = 53;
  tm.tm_isdst = -1;
  EXPECT_NEAR(t.start_unix_s, static_cast<double>(std::mktime(&tm)) + 0.672, 1e-6);
}

TEST(ReadSmi, EveryRealTraceReadsWithoutSkips) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(kData + "/h200")) {
    if (e.path().string().find(".smi.csv") == std::string::npos) continue;
    const Trace t = read_trace(e.path().string());
    EXPECT_GT(t.size(), 50u) << e.path();
    EXPECT_EQ(t.diagnostics.rows_skipped, 0u) << e.path();
    EXPECT_EQ(t.diagnostics.backward_steps, 0u) << e.path();
    ++n;
  }
  EXPECT_EQ(n, 6);
}

TEST(ReadSmi, HostCsvMergesOntoGpuTimeAxis) {
  ReadOptions o;
  o.host_path = kVggHost;
  const Trace t = read_trace(kVgg, o);
  const Channel* cpu = t.find(Metric::kHostCpuUtil);
  const Channel* mem = t.find(Metric::kHostMemUsed);
  ASSERT_NE(cpu, nullptr);
  ASSERT_NE(mem, nullptr);
  ASSERT_EQ(mem->values.size(), t.size());
  // GPU 15:22:53.672 -> nearest host sample 15:22:53.754 (mem 1686 MiB, cpu 0.6 %).
  EXPECT_DOUBLE_EQ(mem->values[0], 1686.0);
  EXPECT_DOUBLE_EQ(cpu->values[0], 0.6);
  std::size_t present = 0;
  for (double v : mem->values) present += !std::isnan(v);
  EXPECT_GT(present, t.size() * 9 / 10);
}

// A host CSV carrying a GPU metric tag (power_w) used to replace the GPU's own power channel
// on merge: 278 of the GPU's 299 power readings became NaN, the rest the host file's.
TEST(ReadSmi, HostCsvNeverReplacesAGpuChannel) {
  const std::filesystem::path host =
      std::filesystem::temp_directory_path() / fmt::format("epochcast-host-gpu-tags-{}.csv", ::getpid());
  {
    std::ofstream out(host);
    out << "timestamp,cpu_util_pct,power_w\n"
           "2026/11/30 15:22:53.700,12.5,999\n"
           "2026/11/30 15:22:53.800,13.5,999\n";
  }
  ReadOptions o;
  o.host_path = host.string();
  const Trace merged = read_trace(kVgg, o);
  const Trace plain = read_trace(kVgg);
  std::filesystem::remove(host);
  ASSERT_EQ(merged.size(), plain.size());
  EXPECT_EQ(merged.find(Metric::kPower)->values, plain.find(Metric::kPower)->values);
  EXPECT_DOUBLE_EQ(merged.find(Metric::kHostCpuUtil)->values[0], 12.5);
  bool warned = false;
  for (const auto& w : merged.diagnostics.warnings)
    warned = warned || w.find("ignored GPU metric columns in a host CSV") != std::string::npos;
  EXPECT_TRUE(warned);

  // Only GPU columns: nothing to merge is an error naming the file, not an empty merge.
  const std::string only_gpu = "timestamp,power_w\n2026/11/30 15:22:53.700,999\n";
  try {
    ReadOptions h;
    (void)read_trace_from_string(only_gpu, "only_gpu.host.csv", h);  // as a trace it is fine
    o.host_path = host.string();
    std::ofstream(host) << only_gpu;
    (void)read_trace(kVgg, o);
    std::filesystem::remove(host);
    FAIL() << "a host CSV without host metrics was merged";
  } catch (const Error& e) {
    std::filesystem::remove(host);
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_NE(std::string(e.what()).find("names no host metric"), std::string::npos) << e.what();
  }
}

// 100,000 unknown columns were listed in one 789 KB warning line (printed by `info`).
TEST(ReadSmi, IgnoredColumnWarningIsBounded) {
  std::string header = "timestamp, power.draw [W]", row = "2026/11/30 10:00:00.000, 70 W";
  for (int i = 0; i < 100000; ++i) {
    header += fmt::format(", x{}", i);
    row += ", 1";
  }
  const Trace t = read_trace_from_string(header + "\n" + row + "\n", "wide.csv");
  ASSERT_EQ(t.size(), 1u);
  std::string warning;
  for (const auto& w : t.diagnostics.warnings)
    if (w.find("ignored nvidia-smi columns") != std::string::npos) warning = w;
  EXPECT_LT(warning.size(), 400u) << warning.substr(0, 400);
  EXPECT_NE(warning.find("x0, x1, "), std::string::npos) << warning.substr(0, 400);
  EXPECT_NE(warning.find("(100000 in all)"), std::string::npos) << warning.substr(0, 400);
}

TEST(ReadSmi, NoUnitsAndNotSupportedValues) {
  const std::string log =
      "timestamp, index, name, power.draw [W], utilization.gpu [%], clocks_event_reasons.active\n"
      "2026/11/30 10:00:00.000, 0, Tesla T4, 70.10, 97, 0x0000000000000004\n"
      "2026/11/30 10:00:00.100, 0, Tesla T4, [N/A], [Not Supported], [Unknown Error]\n"
      "2026/11/30 10:00:00.200, 0, Tesla T4, [GPU is lost], 3, 0x0\n";
  const Trace t = read_trace_from_string(log, "t4.csv");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_DOUBLE_EQ(t.find(Metric::kPower)->values[0], 70.1);
  EXPECT_TRUE(std::isnan(t.find(Metric::kPower)->values[1]));
  EXPECT_TRUE(std::isnan(t.find(Metric::kPower)->values[2]));
  EXPECT_TRUE(std::isnan(t.find(Metric::kGpuUtil)->values[1]));
  EXPECT_DOUBLE_EQ(t.find(Metric::kGpuUtil)->values[2], 3.0);
  EXPECT_DOUBLE_EQ(t.find(Metric::kClockEventReasons)->values[0], 4.0);
  EXPECT_FALSE(t.diagnostics.warnings.empty());
}

TEST(ReadSmi, ConvertsOtherUnitsAndRejectsUnknownOnes) {
  const std::string log = std::string(kSmiHeader) +
                          "2026/11/30 10:00:00.000, 0, X, 1.98 GHz, 2 GiB, 312400 mW, 97 %, P2\n";
  const Trace t = read_trace_from_string(log, "units.csv");
  EXPECT_NEAR(t.find(Metric::kSmClock)->values[0], 1980.0, 1e-9);
  EXPECT_NEAR(t.find(Metric::kMemUsed)->values[0], 2048.0, 1e-9);
  EXPECT_NEAR(t.find(Metric::kPower)->values[0], 312.4, 1e-9);
  EXPECT_DOUBLE_EQ(t.find(Metric::kPstate)->values[0], 2.0);

  const std::string bad = std::string(kSmiHeader) +
                          "2026/11/30 10:00:00.000, 0, X, 1980 MHz, 797 MiB, 312.40 horsepower, 97 %, P0\n";
  const Error e = string_error(bad, "hp.csv");
  EXPECT_EQ(e.code(), ErrorCode::kParse);
  EXPECT_EQ(e.where().field, "power.draw [W]");
  EXPECT_EQ(e.where().line, 2u);
  EXPECT_NE(std::string(e.what()).find("horsepower"), std::string::npos);
}

TEST(ReadSmi, NoHeaderNeedsTheFieldList) {
  const std::string log = "2026/11/30 10:00:00.000, 0, 312.40 W, 97 %\n"
                          "2026/11/30 10:00:00.100, 0, 300.00 W, 95 %\n";
  EXPECT_THROW((void)read_trace_from_string(log, "noheader.csv"), Error);
  ReadOptions o;
  o.smi_fields = {"timestamp", "index", "power.draw", "utilization.gpu"};
  const Trace t = read_trace_from_string(log, "noheader.csv", o);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_DOUBLE_EQ(t.find(Metric::kPower)->values[1], 300.0);
  EXPECT_DOUBLE_EQ(t.find(Metric::kGpuUtil)->values[0], 97.0);
}

// A --fields log that has a header after all, one that fails part way (an unknown unit in its
// fifth column): the header is refused whole and the field list stays in force. Before
// 2026-12-04 the columns read up to the failure stayed (under --lenient), the rows were split
// by them, and a longer header's slots outran the row buffer (fuzz_trace: a heap overflow).
TEST(ReadSmi, FieldListSurvivesAHeaderThatFailsPartWay) {
  const std::string log = "timestamp, index, power.draw [W], utilization.gpu [%], clocks.current.memory [M*z]\n"
                          "2026/11/30 10:00:00.000, 0, 97 %, 312.40 W\n"
                          "2026/11/30 10:00:00.100, 0, 95 %, 300.00 W\n";
  ReadOptions o;
  o.format = TraceFormat::kNvidiaSmi;  // the field list in force from the first line on
  o.smi_fields = {"timestamp", "index", "utilization.gpu", "power.draw"};
  const Error e = string_error(log, "fields_header.csv", o);
  EXPECT_EQ(e.where().line, 1u);
  EXPECT_NE(std::string(e.what()).find("M*z"), std::string::npos) << e.what();
  o.lenient = true;
  const Trace t = read_trace_from_string(log, "fields_header.csv", o);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_DOUBLE_EQ(t.find(Metric::kGpuUtil)->values[0], 97.0);
  EXPECT_DOUBLE_EQ(t.find(Metric::kPower)->values[1], 300.0);
}

// A header after rows read by a --fields list would replace the columns those rows were split
// by (and drop them): refused, naming the line; --lenient skips it and keeps every row.
TEST(ReadSmi, HeaderAfterFieldListRowsIsRefused) {
  const std::string log = "2026/11/30 10:00:00.000, 0, 97 %, 312.40 W\n"
                          "timestamp, index, utilization.gpu [%], power.draw [W]\n"
                          "2026/11/30 10:00:00.100, 0, 95 %, 300.00 W\n";
  ReadOptions o;
  o.smi_fields = {"timestamp", "index", "utilization.gpu", "power.draw"};
  const Error e = string_error(log, "late_header.csv", o);
  EXPECT_EQ(e.where().line, 2u);
  EXPECT_NE(std::string(e.what()).find("after data rows read with --fields"), std::string::npos) << e.what();
  o.lenient = true;
  const Trace t = read_trace_from_string(log, "late_header.csv", o);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_DOUBLE_EQ(t.find(Metric::kGpuUtil)->values[1], 95.0);
}

TEST(ReadSmi, InterleavedGpusPickTheBusiestAndWarn) {
  std::string log = std::string(kSmiHeader);
  for (int i = 0; i < 10; ++i) {
    log += fmt::format("2026/11/30 10:00:{:02}.000, 0, NVIDIA A100, 1410 MHz, 100 MiB, 60.0 W, 0 %, P0\n", i);
    log += fmt::format("2026/11/30 10:00:{:02}.000, 1, NVIDIA A100, 1410 MHz, 9000 MiB, 300.0 W, 95 %, P0\n", i);
  }
  const Trace t = read_trace_from_string(log, "two.csv");
  EXPECT_EQ(t.gpu.index, 1);
  ASSERT_EQ(t.gpus_in_source.size(), 2u);
  EXPECT_EQ(t.size(), 10u);
  EXPECT_NEAR(t.time_s.back(), 9.0, 1e-9);
  bool warned = false;
  for (const auto& w : t.diagnostics.warnings) warned |= w.find("2 GPUs") != std::string::npos;
  EXPECT_TRUE(warned);

  ReadOptions o;
  o.gpu = 0;
  const Trace t0 = read_trace_from_string(log, "two.csv", o);
  EXPECT_EQ(t0.gpu.index, 0);
  EXPECT_DOUBLE_EQ(t0.find(Metric::kMemUsed)->values[3], 100.0);
  o.gpu = 7;
  try {
    (void)read_trace_from_string(log, "two.csv", o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

TEST(ReadSmi, ClockStepsRepeatsAndMidnightAreCountedAndAxisStaysMonotone) {
  const std::string log =
      "timestamp, power.draw [W]\n"
      "23:59:59.000, 1 W\n"
      "23:59:59.500, 1 W\n"
      "00:00:00.000, 1 W\n"   // midnight
      "00:00:00.000, 1 W\n"   // repeated
      "00:00:00.500, 1 W\n"
      "23:59:58.000, 1 W\n"   // the clock stepped back 2.5 s across midnight
      "00:00:00.300, 1 W\n";  // and crosses midnight again
  const Trace t = read_trace_from_string(log, "tod.csv");
  ASSERT_EQ(t.size(), 7u);
  EXPECT_EQ(t.diagnostics.midnight_rollovers, 2u);
  EXPECT_EQ(t.diagnostics.repeated_timestamps, 1u);
  EXPECT_EQ(t.diagnostics.backward_steps, 1u);
  for (std::size_t i = 1; i < t.size(); ++i) EXPECT_GE(t.time_s[i], t.time_s[i - 1]);
  EXPECT_NEAR(t.time_s[2], 1.0, 1e-9);
}

// Found by fuzzing (tests/fuzz/fuzz_trace, minimised): re-basing a backward step as
// raw + (prev - raw) rounded to 0.3999999999999999 after 0.4, so time went back 6e-17 s.
TEST(ReadSmi, BackwardStepRebaseIsExactlyMonotone) {
  const Trace t = read_trace_from_string("timestamp, memory.used\n3.4, 7\n2, 7\n", "step.csv");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.diagnostics.backward_steps, 1u);
  EXPECT_GE(t.time_s[1], t.time_s[0]);
  const Trace u = read_trace_from_string(
      "timestamp, memory.used\n1764516173.1, 7\n1764516173.3, 7\n1764516000.7, 7\n1764516173.9, 7\n", "step2.csv");
  ASSERT_EQ(u.size(), 4u);
  for (std::size_t i = 1; i < u.size(); ++i) EXPECT_GE(u.time_s[i], u.time_s[i - 1]) << i;
  EXPECT_NEAR(u.time_s[2], 0.4, 1e-6);  // one interval (0.2 s) after the last good sample
}

// Zone-less timestamps follow the machine's TZ rules, including a DST jump (POSIX TZ string,
// so no tzdata is needed).
TEST(ReadSmi, LocalTimeFollowsTzRulesAcrossDaylightSaving) {
  const char* old_tz = std::getenv("TZ");
  const std::string saved = old_tz ? old_tz : "";
  ::setenv("TZ", "EST5EDT,M3.2.0,M11.1.0", 1);
  ::tzset();
  const std::string log = "timestamp, power.draw [W]\n"
                          "2026/03/08 01:59:59.500, 1 W\n"   // EST (UTC-5)
                          "2026/03/08 03:00:00.000, 1 W\n";  // EDT (UTC-4): 0.5 s later
  const Trace t = read_trace_from_string(log, "dst.csv");
  if (old_tz) ::setenv("TZ", saved.c_str(), 1);
  else ::unsetenv("TZ");
  ::tzset();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_NEAR(t.time_s[1], 0.5, 1e-9);
  EXPECT_NEAR(t.start_unix_s, 1772953199.5, 1e-6);  // 2026-03-08T06:59:59.5Z
  EXPECT_EQ(t.diagnostics.backward_steps, 0u);
}

TEST(ReadSmi, ZonedAndUnixTimestamps) {
  const std::string iso = "timestamp,power_w\n2026-11-30T15:22:53.672+01:00,1\n2026-11-30T14:22:53.772Z,2\n";
  const Trace a = read_trace_from_string(iso, "iso.csv");
  EXPECT_NEAR(a.start_unix_s, 1796048573.672, 1e-6);
  EXPECT_NEAR(a.time_s[1], 0.1, 1e-9);
  const Trace u = read_trace_from_string("timestamp,power_w\n1796048573.672,1\n1796048573.772,2\n", "unix.csv");
  EXPECT_NEAR(u.start_unix_s, 1796048573.672, 1e-6);
  EXPECT_NEAR(u.time_s[1], 0.1, 1e-9);
}

TEST(ReadCanonical, RoundTripThroughTheWriterKeepsValuesAndMissing) {
  const Trace t = read_trace(kVgg);
  std::ostringstream out;
  write_canonical_csv(t, out);
  const std::string csv = out.str();
  EXPECT_EQ(csv.rfind("# epochcast-trace v1\n", 0), 0u);
  EXPECT_EQ(detect_format(csv), TraceFormat::kCanonical);
  const Trace back = read_trace_from_string(csv, "roundtrip.csv");
  EXPECT_EQ(back.format, "canonical");
  ASSERT_EQ(back.size(), t.size());
  EXPECT_EQ(back.gpu.name, "NVIDIA H200");
  EXPECT_EQ(back.gpu.index, 0);
  EXPECT_NEAR(back.start_unix_s, t.start_unix_s, 1e-3);
  for (std::size_t i = 0; i < t.size(); ++i) EXPECT_NEAR(back.time_s[i], t.time_s[i], 2e-3);
  for (const Channel& c : t.channels) {
    const Channel* b = back.find(c.metric);
    ASSERT_NE(b, nullptr) << info(c.metric).tag;
    for (std::size_t i = 0; i < c.values.size(); ++i) {
      if (std::isnan(c.values[i])) EXPECT_TRUE(std::isnan(b->values[i]));
      else EXPECT_DOUBLE_EQ(b->values[i], c.values[i]);
    }
  }
}

TEST(ReadCanonical, StreamingWriterRowsWithMissingValues) {
  std::ostringstream out;
  CanonicalCsvWriter w(out, {Metric::kGpuUtil, Metric::kPower}, true);
  GpuIdentity gpu{2, "NVIDIA H200", "GPU-abc"};
  w.write_header(gpu);
  const double r0[] = {97.0, 312.4};
  const double r1[] = {std::nan(""), 300.0};
  w.write_row(1764516173.672, gpu, r0);
  w.write_row(1764516173.772, gpu, r1);
  EXPECT_NE(out.str().find("2025-11-30T15:22:53.672Z,2,GPU-abc,NVIDIA H200,97,312.4\n"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find(",NVIDIA H200,,300\n"), std::string::npos) << out.str();
  const Trace t = read_trace_from_string(out.str(), "w.csv");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.gpu.index, 2);
  EXPECT_EQ(t.gpu.uuid, "GPU-abc");
  EXPECT_NEAR(t.start_unix_s, 1764516173.672, 1e-6);
  EXPECT_TRUE(std::isnan(t.find(Metric::kGpuUtil)->values[1]));
}

TEST(DetectFormat, FromContentOnly) {
  EXPECT_EQ(detect_format(kSmiHeader), TraceFormat::kNvidiaSmi);
  EXPECT_EQ(detect_format("#Entity   GPUTL  POWER\nID               W\n"), TraceFormat::kDcgmi);
  EXPECT_EQ(detect_format("timestamp,gpu_util_pct,power_w\n1.0,2,3\n"), TraceFormat::kCanonical);
  EXPECT_EQ(detect_format("timestamp,cpu_util_pct,mem_used_mib\n"), TraceFormat::kCanonical);
  EXPECT_EQ(detect_format("hello world\n"), TraceFormat::kAuto);
  EXPECT_EQ(detect_format(""), TraceFormat::kAuto);
}

}  // namespace
}  // namespace epochcast
