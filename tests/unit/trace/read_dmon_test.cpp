// dcgmi dmon logs and the incremental reader.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "epochcast/core/error.hpp"
#include "epochcast/trace/read.hpp"
#include "reader_test_kit.hpp"

namespace epochcast {
namespace {

using testing::slurp;

const std::string kData = EPOCHCAST_TEST_DATA;
const std::string kDmon = kData + "/dcgmi/two_gpus_100ms.dmon.log";

TEST(ReadDmon, HeaderUnitsRowIntervalAndBusiestGpu) {
  const Trace t = read_trace(kDmon);
  EXPECT_EQ(t.format, "dcgmi");
  EXPECT_EQ(t.gpu.index, 1);  // GPU 1 was the busy one
  ASSERT_EQ(t.gpus_in_source.size(), 2u);
  ASSERT_EQ(t.size(), 40u);
  EXPECT_NEAR(t.median_interval_s(), 0.1, 1e-12);  // from "-d 100" in the comment
  EXPECT_NEAR(t.duration_s(), 3.9, 1e-9);
  EXPECT_DOUBLE_EQ(t.find(Metric::kPower)->values[0], 600.5);
  EXPECT_DOUBLE_EQ(t.find(Metric::kGpuUtil)->values[0], 90.0);
  EXPECT_DOUBLE_EQ(t.find(Metric::kSmClock)->values[0], 1980.0);
  EXPECT_DOUBLE_EQ(t.find(Metric::kMemUsed)->values[0], 9000.0);
  EXPECT_DOUBLE_EQ(t.find(Metric::kTemperature)->values[0], 46.0);
  bool interval_warned = false;
  for (const auto& w : t.diagnostics.warnings) interval_warned |= w.find("no timestamps") != std::string::npos;
  EXPECT_TRUE(interval_warned);
}

TEST(ReadDmon, NotAvailableIsMissingAndGpuSelectable) {
  ReadOptions o;
  o.gpu = 0;
  o.interval_s = 0.5;
  const Trace t = read_trace(kDmon, o);
  EXPECT_EQ(t.gpu.index, 0);
  EXPECT_NEAR(t.duration_s(), 39 * 0.5, 1e-9);
  EXPECT_TRUE(std::isnan(t.find(Metric::kMemUtil)->values[5]));
  EXPECT_DOUBLE_EQ(t.find(Metric::kMemUtil)->values[4], 2.0);
}

TEST(ReadDmon, TimestampPrefixedRows) {
  const std::string log =
      "#Entity   GPUTL  POWER\n"
      "ID               W\n"
      "2026-11-30 10:00:00.000  GPU 0  97  312.4\n"
      "2026-11-30 10:00:00.250  GPU 0  N/A  300.0\n";
  const Trace t = read_trace_from_string(log, "stamped.dmon");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_NEAR(t.time_s[1], 0.25, 1e-9);
  EXPECT_TRUE(std::isnan(t.find(Metric::kGpuUtil)->values[1]));
  EXPECT_EQ(t.first_timestamp, "2026-11-30 10:00:00.000");
}

// Found while reading for the fuzzer: a lower-case "#entity" header is recognised, but the
// column names were taken from byte 5 (a size_t wrapped past npos), inventing a column "ty"
// and failing every row with "wrong column count (2, expected 3)".
TEST(ReadDmon, HeaderKeywordInAnyCase) {
  for (const char* header : {"#entity   GPUTL  POWER", "# ENTITY  GPUTL  POWER", "  #eNtItY GPUTL  POWER"}) {
    const std::string log = std::string(header) + "\nID               W\nGPU 0     97     312.4\nGPU 0     95     300.5\n";
    const Trace t = read_trace_from_string(log, "case.dmon");
    ASSERT_EQ(t.size(), 2u) << header;
    ASSERT_EQ(t.channels.size(), 2u) << header;
    EXPECT_EQ(t.find(Metric::kPower)->values[1], 300.5) << header;
  }
}

TEST(ReadDmon, UnknownUnitInUnitsRowIsRejected) {
  const std::string log = "#Entity   GPUTL  POWER\nID               furlong\nGPU 0     97     312.4\n";
  try {
    (void)read_trace_from_string(log, "units.dmon");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().field, "POWER");
    EXPECT_EQ(e.where().line, 2u);
  }
}

TEST(Incremental, ChunkedFeedEqualsWholeFileRead) {
  const std::string path = kData + "/h200/resnet50_224_bs256_bf16.smi.csv";
  const std::string content = slurp(path);
  const Trace whole = read_trace(path);
  IncrementalTraceReader reader("live.csv");
  std::mt19937 rng(42);
  std::size_t pos = 0, rows = 0;
  while (pos < content.size()) {
    const std::size_t n = std::min<std::size_t>(content.size() - pos, 1 + rng() % 300);
    rows += reader.feed(std::string_view(content).substr(pos, n));
    pos += n;
    if (pos > content.size() / 2 && pos < content.size() / 2 + 300) {
      // Mid-stream the trace holds every completed row so far.
      EXPECT_EQ(reader.trace().size(), rows);
    }
  }
  EXPECT_EQ(rows, whole.size());
  const Trace& live = reader.trace();
  ASSERT_EQ(live.size(), whole.size());
  EXPECT_EQ(live.first_timestamp, whole.first_timestamp);
  for (std::size_t i = 0; i < whole.size(); ++i) EXPECT_DOUBLE_EQ(live.time_s[i], whole.time_s[i]);
  EXPECT_DOUBLE_EQ(live.find(Metric::kPower)->values.back(), whole.find(Metric::kPower)->values.back());
}

TEST(Incremental, PartialLineWaitsForItsNewline) {
  IncrementalTraceReader reader("live.csv");
  EXPECT_EQ(reader.feed("timestamp, power.draw [W]\n2026/11/30 10:00:00.000, 31"), 0u);
  EXPECT_EQ(reader.trace().size(), 0u);
  EXPECT_EQ(reader.feed("2.4 W\n"), 1u);
  ASSERT_EQ(reader.trace().size(), 1u);
  EXPECT_DOUBLE_EQ(reader.trace().find(Metric::kPower)->values[0], 312.4);
}

}  // namespace
}  // namespace epochcast
