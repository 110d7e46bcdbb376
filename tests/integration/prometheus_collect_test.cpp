// The real Prometheus server scraping `epochcast collect --listen` (driven by the fake NVML
// replaying a shared H200 trace), then the range read back through query_range and detected.
#include <gtest/gtest.h>

#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>

#include "collect_process.hpp"
#include "epochcast/collect/prometheus.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/epoch/detect.hpp"
#include "epochcast/trace/read.hpp"
#include "prometheus_server.hpp"

namespace epochcast {
namespace {

using testing::fake_nvml_env;
using testing::PrometheusServer;
using testing::Process;
using testing::TempDir;

const std::string kResnet = std::string(EPOCHCAST_TEST_DATA) + "/h200/resnet50_224_bs256_bf16.smi.csv";

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TEST(PrometheusCollect, ScrapedCollectorReadsBackWithTheSamePeriod) {
  if (!testing::prometheus_available())
    GTEST_SKIP() << testing::prometheus_binary() << " is not installed (Debian package prometheus; .ci/run installs it)";
  // Real time: scraped every 100 ms like the trace's own sampling. At 2x (0.2 s of trace per
  // scrape) the one-sample boundary rise in mem_util was missed at some boundaries and
  // detection abstained in 1 of 4 full runs (confidence 0.28): a test of detection at half
  // the resolution, not of the Prometheus round trip this test is for.
  constexpr double kSpeed = 1;
  TempDir dir("prometheus-collect");
  PrometheusServer prometheus(dir, {}, "100ms");
  ASSERT_TRUE(prometheus.wait_ready()) << prometheus.log();

  // The collector binds a port of its own choosing and says which; Prometheus is then told
  // (its discovery applies new targets on a 5 s tick). The replay waits for the first scrape.
  const std::string go = (dir / "go").string();
  auto env = fake_nvml_env(kResnet, "1");
  env["EPOCHCAST_FAKE_NVML_START_FILE"] = go;
  Process collector({EPOCHCAST_CLI, "collect", "--listen", "127.0.0.1:0", "--interval-ms", "50", "-o",
                     (dir / "collected.csv").string()},
                    env, dir.path());
  const int collector_port = collector.serving_port();
  ASSERT_GT(collector_port, 0) << collector.err();
  prometheus.set_targets({"127.0.0.1:" + std::to_string(collector_port)});
  ASSERT_TRUE(prometheus.wait_target_up(60)) << prometheus.log();

  const double started = unix_now();
  std::ofstream(go).put('\n');
  std::this_thread::sleep_for(std::chrono::milliseconds(30500));  // the 29.9 s trace
  collector.signal(SIGTERM);
  ASSERT_EQ(collector.wait(60), 0) << collector.err();
  const double ended = unix_now();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the last scrape lands

  PrometheusQuery q;
  q.url = prometheus.url();
  q.uuid = read_trace((dir / "collected.csv").string()).gpu.uuid;
  q.start_unix_s = std::floor(started);
  q.end_unix_s = std::ceil(ended);
  q.step_s = 0.1;
  q.max_points_per_request = 50;  // force several query_range requests over the range
  const Trace scraped = fetch_prometheus_trace(q);
  EXPECT_EQ(scraped.format, "prometheus");
  EXPECT_EQ(scraped.gpu.name, "NVIDIA H200");
  EXPECT_EQ(scraped.gpu.index, 0);
  // 30.5 s at a 100 ms step is 305 points; scrapes that time out on a loaded machine leave gaps.
  EXPECT_GE(scraped.size(), 180u) << "Prometheus kept too few scrapes";
  for (Metric m : {Metric::kGpuUtil, Metric::kPower, Metric::kSmClock, Metric::kMemUsed, Metric::kEnergy})
    EXPECT_NE(scraped.find(m), nullptr) << info(m).tag << " did not come back through dcgm-exporter names";

  // The same range read raw: the stored scrapes at their own timestamps. A grid read repeats or
  // skips a value wherever scrape jitter crosses the grid (bench/scrape_sim.py: resnet50 at 2x
  // with 20 ms of jitter abstains in 14 of 50 read-backs), so detection reads the raw samples.
  PrometheusQuery raw_query = q;
  raw_query.raw_samples = true;
  raw_query.raw_window_s = 5;  // several windows over the 31 s range
  const Trace raw = fetch_prometheus_trace(raw_query);
  EXPECT_EQ(raw.gpu.uuid, q.uuid);
  EXPECT_GE(raw.size(), 180u) << "Prometheus kept too few scrapes";
  for (std::size_t i = 1; i < raw.size(); ++i) ASSERT_GT(raw.time_s[i], raw.time_s[i - 1]) << i;
  // Scrapes every 100 ms: the raw samples sit ~0.1 s apart, not on any grid of ours.
  EXPECT_NEAR(raw.median_interval_s(), 0.1, 0.02);
  for (Metric m : {Metric::kGpuUtil, Metric::kPower, Metric::kSmClock})
    EXPECT_NE(raw.find(m), nullptr) << info(m).tag << " missing from the raw read";

  const Segmentation original = detect_epochs(read_trace(kResnet));
  const Segmentation got = detect_epochs(raw);
  if (!got.found || std::abs(got.period_s * kSpeed - original.period_s) > 0.04 * original.period_s) {
    // Kept for a post-mortem: what Prometheus gave back, and what the collector wrote.
    const auto keep = std::filesystem::temp_directory_path() / "epochcast-prometheus-scraped.csv";
    std::ofstream out(keep);
    write_canonical_csv(raw, out);
    std::filesystem::copy_file(dir / "collected.csv", keep.string() + ".collected.csv",
                               std::filesystem::copy_options::overwrite_existing);
    ADD_FAILURE() << "scraped trace kept in " << keep.string() << " (" << scraped.size() << " samples)";
  }
  ASSERT_TRUE(original.found);
  ASSERT_TRUE(got.found) << got.reason;
  EXPECT_NEAR(got.period_s * kSpeed, original.period_s, 0.04 * original.period_s) << got.reason;

  // The same through the CLI: detect --prometheus … --raw --json.
  const auto r = testing::run_cli({"detect", "--prometheus", prometheus.url(), "--uuid", q.uuid, "--start",
                                   fmt::format("{}", q.start_unix_s), "--end", fmt::format("{}", q.end_unix_s),
                                   "--raw", "--json"},
                                  {}, dir.path());
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j["found"].get<bool>()) << r.out;
  EXPECT_NEAR(j["period_s"].get<double>() * kSpeed, original.period_s, 0.04 * original.period_s);
}

TEST(PrometheusCollect, ServerDownIsAClearErrorNamingTheUrl) {
  TempDir dir("prometheus-down");
  const std::string url = "http://127.0.0.1:" + std::to_string(testing::free_port());
  const auto r = testing::run_cli(
      {"detect", "--prometheus", url, "--uuid", "GPU-x", "--start", "now-1h", "--end", "now", "--json"}, {},
      dir.path());
  EXPECT_EQ(r.status, exit_status(ErrorCode::kIo)) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NE(j["error"]["message"].get<std::string>().find(url), std::string::npos) << r.out;
}

TEST(PrometheusCollect, RealServerErrorBodyIsReported) {
  if (!testing::prometheus_available()) GTEST_SKIP() << testing::prometheus_binary() << " is not installed";
  TempDir dir("prometheus-error");
  PrometheusServer prometheus(dir, {});
  ASSERT_TRUE(prometheus.wait_ready()) << prometheus.log();
  PrometheusQuery q;
  q.url = prometheus.url();
  q.queries = {"DCGM_FI_DEV_GPU_UTIL{"};  // a PromQL syntax error
  q.start_unix_s = unix_now() - 60;
  q.end_unix_s = unix_now();
  try {
    (void)fetch_prometheus_trace(q);
    FAIL() << "a bad query must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRemote);
    EXPECT_NE(std::string(e.what()).find(prometheus.url()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad_data"), std::string::npos) << e.what();
  }
  // More than 11,000 points in one request is what the chunking avoids: ask for it anyway.
  httplib::Client client("127.0.0.1", prometheus.port());
  auto res = client.Get(fmt::format("/api/v1/query_range?query=up&start={}&end={}&step=1", q.end_unix_s - 20000,
                                    q.end_unix_s));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << "the server's point limit is what we chunk for";
  q.queries = {"up"};
  q.start_unix_s = q.end_unix_s - 20000;
  q.step_s = 1;
  try {
    (void)fetch_prometheus_trace(q);  // chunked: accepted, but nothing scraped -> not found
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound) << e.what();
  }
}

}  // namespace
}  // namespace epochcast
