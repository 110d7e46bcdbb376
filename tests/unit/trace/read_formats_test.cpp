// The readers of the logs operators already keep (tests/data/formats/, shapes from each tool's
// documentation: tests/data/README.md): nvidia-smi dmon, dcgm-exporter scrapes, query_range JSON,
// DCGM_FI_* / Grafana / W&B / MLflow CSVs, .gz; nvidia-smi pmon refused with why.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "epochcast/core/error.hpp"
#include "epochcast/trace/read.hpp"
#include "reader_test_kit.hpp"

namespace epochcast {
namespace {

using testing::slurp;

const std::string kDir = std::string(EPOCHCAST_TEST_DATA) + "/formats/";

std::string parse_error(std::string_view content, const std::string& name = "bad.log", ReadOptions o = {}) {
  try {
    (void)read_trace_from_string(content, name, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool has_warning(const Trace& t, std::string_view what) {
  for (const auto& w : t.diagnostics.warnings)
    if (w.find(what) != std::string::npos) return true;
  return false;
}

// Every sample is the real H200 run tests/data/h200/resnet50_224_bs256_bf16.smi.csv (100 ms) written
// in another tool's shape, with an idle GPU 1 beside it (make_samples.py): the reader must give
// GPU 0's series exactly, on the same clock. `step` takes every step-th row (dmon logs whole seconds).
const Trace& reference() {
  static const Trace t = read_trace(std::string(EPOCHCAST_TEST_DATA) + "/h200/resnet50_224_bs256_bf16.smi.csv");
  return t;
}

void expect_the_real_run(const Trace& t, std::size_t step = 1, bool same_clock = true) {
  const Trace& ref = reference();
  EXPECT_EQ(t.gpu.index, 0);
  ASSERT_EQ(t.size(), (ref.size() + step - 1) / step);
  for (Metric m : {Metric::kGpuUtil, Metric::kPower}) {
    const Channel* c = t.find(m);
    ASSERT_NE(c, nullptr) << info(m).tag;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const double want = ref.find(m)->values[i * step];
      // dmon prints whole watts
      ASSERT_NEAR(c->values[i], want, step > 1 && m == Metric::kPower ? 0.5 : 1e-9) << info(m).tag << " sample " << i;
    }
  }
  if (same_clock)
    for (std::size_t i = 0; i < t.size(); ++i) ASSERT_NEAR(t.time_s[i], ref.time_s[i * step], 1.5e-3) << "sample " << i;
}

TEST(ReadFormats, NvidiaSmiDmonPlainWithRepeatedHeaders) {
  ReadOptions o;
  o.interval_s = 1;
  const Trace t = read_trace(kDir + "two_gpus.smi-dmon.log", o);
  EXPECT_EQ(t.format, "nvidia-smi-dmon");
  ASSERT_EQ(t.gpus_in_source.size(), 2u);
  expect_the_real_run(t, 10, false);
  EXPECT_DOUBLE_EQ(t.median_interval_s(), 1.0);
  // mtemp printed "-" (not supported): a channel of missing values, counted and warned
  ASSERT_NE(t.find(Metric::kMemTemperature), nullptr);
  EXPECT_TRUE(std::isnan(t.find(Metric::kMemTemperature)->values[0]));
  EXPECT_TRUE(has_warning(t, "missing value(s)"));
  EXPECT_TRUE(has_warning(t, "1 repeated header line(s) skipped"));
  EXPECT_EQ(t.diagnostics.time_axis, TimeAxis::kStatedInterval);
}

TEST(ReadFormats, NvidiaSmiDmonWithoutIntervalIsAGuessSaidFirst) {
  const Trace t = read_trace(kDir + "two_gpus.smi-dmon.log");
  EXPECT_EQ(t.diagnostics.time_axis, TimeAxis::kAssumedInterval);
  EXPECT_DOUBLE_EQ(t.diagnostics.interval_s, 1.0);
  ASSERT_FALSE(t.diagnostics.warnings.empty());
  EXPECT_NE(t.diagnostics.warnings.front().find("a guess"), std::string::npos) << t.diagnostics.warnings.front();
}

TEST(ReadFormats, NvidiaSmiDmonPucmWithDateAndTime) {
  const Trace t = read_trace(kDir + "pucm_dt.smi-dmon.log");
  EXPECT_EQ(t.diagnostics.time_axis, TimeAxis::kTimestamps);
  expect_the_real_run(t, 10, false);
  EXPECT_EQ(t.first_timestamp, "2026-11-30 15:28:57");
  EXPECT_DOUBLE_EQ(t.find(Metric::kMemUsed)->values[0], reference().find(Metric::kMemUsed)->values[0]);
  EXPECT_TRUE(has_warning(t, "jpg"));  // ignored columns are listed
}

TEST(ReadFormats, NvidiaSmiPmonIsRefusedSayingWhatItIs) {
  const std::string e = parse_error(slurp(kDir + "pmon.log"), "pmon.log");
  EXPECT_NE(e.find("pmon.log:1:1"), std::string::npos) << e;
  EXPECT_NE(e.find("this is nvidia-smi pmon output: per-process"), std::string::npos) << e;
  EXPECT_NE(e.find("nvidia-smi dmon -s pucm -o DT"), std::string::npos) << e;
}

TEST(ReadFormats, DcgmExporterScrapesAppendedWithTimestampLinesGzipped) {
  const Trace t = read_trace(kDir + "scrapes.metrics.txt.gz");
  EXPECT_EQ(t.format, "prometheus-text");
  EXPECT_EQ(t.diagnostics.time_axis, TimeAxis::kTimestamps);
  expect_the_real_run(t);
  EXPECT_EQ(t.gpu.name, "NVIDIA H200");
  EXPECT_EQ(t.gpu.uuid, "GPU-5f3e2b1a-7c44-4d2e-9a0b-1c2d3e4f5a6b");
  EXPECT_NEAR(t.start_unix_s, reference().start_unix_s, 1e-6);
  EXPECT_TRUE(has_warning(t, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"));
}

TEST(ReadFormats, OneScrapeWithoutTimeNeedsTheInterval) {
  // Scrapes split where a (GPU, metric) pair repeats; no time: the stated interval places them.
  const std::string one =
      "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA H200\"} 40\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA H200\"} 300.5\n";
  ReadOptions o;
  o.interval_s = 0.25;
  const Trace t = read_trace_from_string(one + one + one, "s.txt", o);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_NEAR(t.duration_s(), 0.5, 1e-12);
  EXPECT_EQ(t.diagnostics.time_axis, TimeAxis::kStatedInterval);
  EXPECT_EQ(read_trace_from_string(one + one, "s.txt").diagnostics.time_axis, TimeAxis::kAssumedInterval);
}

TEST(ReadFormats, QueryRangeJsonSavedWithCurl) {
  const Trace t = read_trace(kDir + "query_range.json");
  EXPECT_EQ(t.format, "query-range-json");
  expect_the_real_run(t);
  EXPECT_EQ(t.gpu.name, "NVIDIA H200");
}

TEST(ReadFormats, QueryRangeJsonErrors) {
  EXPECT_NE(parse_error(R"({"status":"success","data":{"resultType":"vector","result":[]}})", "q.json")
                .find("an instant query answer"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"status":"error","errorType":"bad_data","error":"invalid parameter"})", "q.json")
                .find("a Prometheus error: bad_data: invalid parameter"),
            std::string::npos);
  const std::string cut = slurp(kDir + "query_range.json").substr(0, 5000);
  const std::string e = parse_error(cut, "q.json");
  EXPECT_NE(e.find("q.json:1:"), std::string::npos) << e;
  EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;
}

TEST(ReadFormats, WideDcgmCsvOneGpuPerRow) {
  const Trace t = read_trace(kDir + "wide.dcgm.csv");
  EXPECT_EQ(t.format, "dcgm-csv");
  expect_the_real_run(t);
  EXPECT_EQ(t.gpu.uuid, "GPU-5f3e2b1a-7c44-4d2e-9a0b-1c2d3e4f5a6b");
  EXPECT_EQ(t.gpu.name, "NVIDIA H200");
}

TEST(ReadFormats, GrafanaDownloadCsvSeriesNamedByLabelsWithUnits) {
  const Trace t = read_trace(kDir + "grafana.csv");
  EXPECT_EQ(t.format, "grafana-csv");
  ASSERT_EQ(t.gpus_in_source.size(), 2u);
  expect_the_real_run(t);
  EXPECT_EQ(t.gpu.name, "NVIDIA H200");
}

TEST(ReadFormats, GrafanaLegendNamesAreRefusedWithTheFix) {
  const std::string e = parse_error("\"Time\",\"gpu 0\",\"gpu 1\"\n2026-11-30 15:22:53,95,0\n", "g.csv");
  EXPECT_NE(e.find("legend"), std::string::npos) << e;
  EXPECT_NE(parse_error("\"Time\",\"DCGM_FI_DEV_GPU_UTIL{gpu=\"\"0\"\"}\"\n2026-11-30 15:22:53,95 W\n", "g.csv")
                .find("unknown or wrong unit 'W'"),
            std::string::npos);
}

// The run's real epoch ends (resnet50_224_bs256_bf16.truth.json), seconds after the first sample.
std::vector<double> truth_epoch_ends() {
  const double first = reference().start_unix_s;
  std::vector<double> out;
  for (const char* stamp : {"15:29:09.699", "15:29:15.002", "15:29:20.308", "15:29:25.613"}) {
    const Trace one = read_trace_from_string(std::string("timestamp, utilization.gpu [%]\n2026/11/30 ") + stamp + ", 1 %\n", "x");
    out.push_back(one.start_unix_s - first);
  }
  return out;
}

TEST(ReadFormats, WandbSystemMetricsAndEpochMarkers) {
  const Trace t = read_trace(kDir + "wandb_system.csv");
  EXPECT_EQ(t.format, "wandb");
  expect_the_real_run(t);
  ASSERT_NE(t.find(Metric::kHostCpuUtil), nullptr);
  // the epoch counter changes at the first sample at or after each real epoch end
  const auto ends = truth_epoch_ends();
  ASSERT_EQ(t.epoch_markers_s.size(), ends.size());
  for (std::size_t i = 0; i < ends.size(); ++i) EXPECT_NEAR(t.epoch_markers_s[i], ends[i], 0.11);
}

TEST(ReadFormats, MlflowHistoryAndEpochMarkers) {
  const Trace t = read_trace(kDir + "mlflow_history.csv");
  EXPECT_EQ(t.format, "mlflow");
  expect_the_real_run(t);
  EXPECT_NEAR(t.find(Metric::kMemUsed)->values[0], reference().find(Metric::kMemUsed)->values[0], 0.1);
  const auto ends = truth_epoch_ends();
  ASSERT_EQ(t.epoch_markers_s.size(), ends.size());
  for (std::size_t i = 0; i < ends.size(); ++i) EXPECT_NEAR(t.epoch_markers_s[i], ends[i], 1e-3);
  EXPECT_TRUE(has_warning(t, "val_loss"));
}

std::string gzip(std::string_view text) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

TEST(ReadFormats, GzipLogsReadDirectlyIncludingConcatenatedMembers) {
  const std::string text = slurp(kDir + "pucm_dt.smi-dmon.log");
  const std::size_t half = text.find('\n', text.size() / 2) + 1;
  const Trace t = read_trace_from_string(gzip(text.substr(0, half)) + gzip(text.substr(half)), "dmon.log.gz");
  expect_the_real_run(t, 10, false);
  const std::string cut = gzip(text).substr(0, 300);
  EXPECT_NE(parse_error(cut, "cut.gz").find("ends mid-member"), std::string::npos);
}

TEST(ReadFormats, GzipBombStopsAtTheStreamCap) {
  // 64 MiB of one repeated valid row compresses to ~64 KB; a cap of 8 MiB stops it early.
  std::string body = "timestamp, index, utilization.gpu [%]\n";
  const std::string row = "2026/11/30 15:22:53.100, 0, 50 %\n";
  std::string big;
  big.reserve(64u << 20);
  big += body;
  while (big.size() < (64u << 20)) big += row;
  const std::string bomb = gzip(big);
  EXPECT_LT(bomb.size(), 1u << 20);
  ReadOptions o;
  o.max_stream_bytes = 8u << 20;
  const std::string e = parse_error(bomb, "bomb.gz", o);
  EXPECT_NE(e.find("expands past 8388608 bytes when decompressed"), std::string::npos) << e;
}

TEST(ReadFormats, PowerDrawInstantAndEnforcedLimitMapThroughTheTable) {
  const Trace t = read_trace_from_string(
      "timestamp, index, power.draw.instant [W], enforced.power.limit [W], temperature.memory, utilization.gpu [%]\n"
      "2026/11/30 15:22:53.100, 0, 612.30 W, 700.00 W, 61, 97 %\n"
      "2026/11/30 15:22:53.200, 0, 615.10 W, 700.00 W, 61, 98 %\n",
      "new.smi.csv");
  EXPECT_DOUBLE_EQ(t.find(Metric::kPower)->values[1], 615.1);
  EXPECT_DOUBLE_EQ(t.find(Metric::kPowerLimit)->values[0], 700);
  EXPECT_DOUBLE_EQ(t.find(Metric::kMemTemperature)->values[0], 61);
  EXPECT_EQ(metric_by_smi_name("power.draw.average"), Metric::kPower);
}

TEST(ReadFormats, ForeignFilesAreNamed) {
  EXPECT_NE(parse_error("==============NVSMI LOG==============\n\nTimestamp : Mon\n", "q.txt").find("nvidia-smi -q"),
            std::string::npos);
  EXPECT_NE(parse_error("pid, process_name, used_gpu_memory [MiB]\n1, python, 100 MiB\n", "apps.csv")
                .find("--query-compute-apps"),
            std::string::npos);
  EXPECT_NE(parse_error("epoch,loss,val_loss\n0,1.2,1.3\n", "train.csv").find("training log"), std::string::npos);
}

TEST(ReadFormats, DetectFormatOnEachShape) {
  EXPECT_EQ(detect_format("# gpu    pwr  gtemp\n# Idx      W      C\n"), TraceFormat::kSmiDmon);
  EXPECT_EQ(detect_format("#Date       Time        gpu    pwr\n"), TraceFormat::kSmiDmon);
  EXPECT_EQ(detect_format("# HELP DCGM_FI_DEV_GPU_UTIL x\n"), TraceFormat::kExposition);
  EXPECT_EQ(detect_format("1764516173.5\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 5\n"), TraceFormat::kExposition);
  EXPECT_EQ(detect_format("timestamp,gpu,DCGM_FI_DEV_GPU_UTIL\n"), TraceFormat::kDcgmCsv);
  EXPECT_EQ(detect_format("sep=,\n\"Time\",\"DCGM_FI_DEV_GPU_UTIL{gpu=\"\"0\"\"}\"\n"), TraceFormat::kGrafanaCsv);
  EXPECT_EQ(detect_format("_timestamp,system.gpu.0.gpu\n"), TraceFormat::kWandb);
  EXPECT_EQ(detect_format("key,value,timestamp,step\n"), TraceFormat::kMlflow);
  EXPECT_EQ(detect_format("{\"status\":\"success\"}"), TraceFormat::kQueryRangeJson);
}

}  // namespace
}  // namespace epochcast
