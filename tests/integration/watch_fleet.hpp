// A small generated fleet in a real Prometheus (backfilled with promtool) for watch's tests:
// 6 GPUs over 2 h at a 15 s scrape, with the cases watch must tell apart (see make_small_fleet).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <string>

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "collect_process.hpp"
#include "epochcast/fleet/watch.hpp"
#include "epochcast/service/service.hpp"
#include "eval/fleet.hpp"
#include "prometheus_server.hpp"

namespace epochcast::testing {

inline const char* promtool_binary() { return "/usr/bin/promtool"; }

inline double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A job of a known period with a clear boundary event (a validation pass of 15 % of the epoch).
inline FleetJobSpec job(std::map<std::string, std::string> labels, double start_s, double period_s, int epochs,
                        std::uint64_t seed, bool signature = true) {
  FleetJobSpec j;
  j.labels = std::move(labels);
  j.start_s = start_s;
  j.spec.period_s = period_s;
  j.spec.epochs = epochs;
  j.spec.event_duty = 0.15;
  j.spec.event_depth = signature ? 0.5 : 0;
  j.spec.idle_head_s = 30;
  j.spec.warmup_s = 30;
  j.spec.idle_tail_s = 0;
  j.spec.iteration_s = 1.1;
  j.seed = seed;
  return j;
}

inline std::map<std::string, std::string> pod(const std::string& name) {
  return {{"pod", name}, {"namespace", "ml"}, {"container", "trainer"}};
}

// n1/0: pod train-a (300 s epochs), then pod train-b (420 s) 20 s after it: a label change.
// n1/1: idle throughout.
// n2/0: a job without an epoch signature (no boundary event): must not be given a period.
// n2/1: bare metal (no pod labels): a job (600 s), 15 min idle, another (360 s).
// n3/0: pod train-e (480 s) whose series vanish for 4 min mid-run: still one job.
// n3/1: pod train-f (300 s) still running at the end.
inline std::vector<FleetGpuSpec> make_small_fleet() {
  std::vector<FleetGpuSpec> gpus(6);
  const char* hosts[] = {"n1", "n1", "n2", "n2", "n3", "n3"};
  const char* index[] = {"0", "1", "0", "1", "0", "1"};
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    gpus[i].uuid = "GPU-" + std::to_string(1000 + i) + "-aaaa-bbbb";
    gpus[i].hostname = hosts[i];
    gpus[i].gpu = index[i];
  }
  gpus[0].jobs = {job(pod("train-a"), 300, 300, 10, 11), job(pod("train-b"), 3380, 420, 7, 12)};
  gpus[2].jobs = {job(pod("nosig"), 300, 400, 12, 13, false)};
  gpus[3].model_name = "NVIDIA A100-SXM4-80GB";
  gpus[3].jobs = {job({}, 120, 600, 5, 14), job({}, 4100, 360, 7, 15)};
  gpus[4].jobs = {job(pod("train-e"), 600, 480, 10, 16)};
  gpus[4].silent = {{3000, 3240}};
  gpus[5].jobs = {job(pod("train-f"), 3600, 300, 14, 17)};
  return gpus;
}

inline constexpr double kSmallFleetSeconds = 2 * 3600;
// The non-utilisation series are stamped this much later than utilisation (another exporter's
// clock): watch must still put them on one row.
inline constexpr double kSmallFleetSkewS = 3;

// Generates the fleet ending `end_ago_s` before now, backfills it, serves it. Shared by a
// test suite (SetUpTestSuite): a backfill and a start take a few seconds.
class BackfilledFleet {
 public:
  explicit BackfilledFleet(std::vector<FleetGpuSpec> gpus, double duration_s, double skew_s = 0)
      : dir_("watch-fleet"), gpus_(std::move(gpus)) {
    start_unix_s_ = std::floor(unix_now() - duration_s - 60);
    end_unix_s_ = start_unix_s_ + duration_s;
    {
      std::ofstream om(dir_ / "fleet.om");
      truth_ = write_fleet_openmetrics(gpus_, start_unix_s_, duration_s, om, skew_s);
    }
    const std::string data = (dir_ / "tsdb").string();
    const std::string cmd = std::string(promtool_binary()) + " tsdb create-blocks-from openmetrics " +
                            (dir_ / "fleet.om").string() + " " + data + " > " + (dir_ / "promtool.log").string() +
                            " 2>&1";
    backfill_status_ = std::system(cmd.c_str());
    if (backfill_status_ != 0) return;
    server_ = std::make_unique<PrometheusServer>(dir_, std::vector<std::string>{}, "1h", data);
    ready_ = server_->wait_ready(60);
  }
  [[nodiscard]] bool ready() const { return backfill_status_ == 0 && ready_; }
  [[nodiscard]] std::string why_not_ready() const {
    return backfill_status_ != 0 ? "promtool failed: " + read_file(dir_ / "promtool.log")
                                 : "prometheus not ready: " + (server_ ? server_->log() : std::string());
  }
  [[nodiscard]] std::string url() const { return server_->url(); }
  [[nodiscard]] double start_unix_s() const { return start_unix_s_; }
  [[nodiscard]] double end_unix_s() const { return end_unix_s_; }
  [[nodiscard]] const std::vector<FleetJobTruth>& truth() const { return truth_; }
  [[nodiscard]] const std::vector<FleetGpuSpec>& gpus() const { return gpus_; }
  [[nodiscard]] const TempDir& dir() const { return dir_; }

 private:
  TempDir dir_;
  std::vector<FleetGpuSpec> gpus_;
  double start_unix_s_ = 0, end_unix_s_ = 0;
  std::vector<FleetJobTruth> truth_;
  int backfill_status_ = -1;
  bool ready_ = false;
  std::unique_ptr<PrometheusServer> server_;
};

// One backfilled small fleet (with the exporter clock skew) and one Service for a whole test
// suite, since a backfill takes seconds; every test skips where Prometheus is not installed.
// Base is ::testing::Test or ::testing::TestWithParam<...>.
template <class Base = ::testing::Test>
class SmallFleetSuite : public Base {
 protected:
  static void SetUpTestSuite() {
    fleet_ = new BackfilledFleet(make_small_fleet(), kSmallFleetSeconds, kSmallFleetSkewS);
    service_ = new Service();
  }
  static void TearDownTestSuite() {
    delete fleet_;
    delete service_;
    fleet_ = nullptr;
    service_ = nullptr;
  }
  void SetUp() override {
    if (!prometheus_available()) GTEST_SKIP() << "no prometheus binary";
    ASSERT_TRUE(fleet_->ready()) << fleet_->why_not_ready();
  }
  // The whole small fleet's history in one pass, analysed at once (no settle time).
  static fleet::WatchRequest small_fleet_request(const std::string& url, std::vector<std::string> gpus) {
    fleet::WatchRequest r;
    r.url = url;
    r.lookback_s = kSmallFleetSeconds + 600;
    r.settle_s = 0;
    r.gpus = std::move(gpus);
    return r;
  }
  static inline BackfilledFleet* fleet_ = nullptr;
  static inline Service* service_ = nullptr;
};

// GET /v1/fleet, polled until the watcher's first pass is in (at most 60 s): the last answer,
// an empty object if none came.
inline nlohmann::json fleet_after_first_pass(httplib::Client& client) {
  nlohmann::json fleet = nlohmann::json::object();
  for (int i = 0; i < 600; ++i) {
    if (auto res = client.Get("/v1/fleet"); res && res->status == 200) {
      fleet = nlohmann::json::parse(res->body);
      if (fleet.value("passes", 0) >= 1) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return fleet;
}

}  // namespace epochcast::testing
