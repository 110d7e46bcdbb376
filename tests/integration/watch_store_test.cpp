// watch --store --job-key against a real Prometheus: ended jobs are recorded once under the key
// their labels make, runs of one key on two GPU types become a measured pair, the earlier run's
// prediction is checked when the later one ends, and a restarted watcher records nothing twice.
#include <gtest/gtest.h>

#include <memory>

#include "epochcast/fleet/watch.hpp"
#include "epochcast/service/service.hpp"
#include "epochcast/store/job_store.hpp"
#include "watch_fleet.hpp"

using namespace epochcast;
using namespace epochcast::testing;

namespace {

std::map<std::string, std::string> k8s(const std::string& pod, const std::string& job_name) {
  return {{"pod", pod}, {"namespace", "ml"}, {"container", "trainer"}, {"job_name", job_name}};
}

// GPU 0 (H100): job r50 (300 s epochs) ends at ~33 min. GPU 1 (A100 80 GB): r50 again from
// 40 min (450 s epochs), ends at ~86 min. GPU 2 (H100): bert, still running at 2 h. GPU 3
// (H100): bare metal, no labels, ends at ~35 min: recorded without a key.
std::vector<FleetGpuSpec> store_fleet() {
  std::vector<FleetGpuSpec> gpus(4);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    gpus[i].uuid = "GPU-" + std::to_string(2000 + i) + "-cccc-dddd";
    gpus[i].hostname = "s" + std::to_string(i);
  }
  gpus[1].model_name = "NVIDIA A100-SXM4-80GB";
  gpus[0].jobs = {job(k8s("r50-x7k2p", "r50"), 120, 300, 6, 21)};
  gpus[1].jobs = {job(k8s("r50-q9m4z", "r50"), 2400, 450, 6, 22)};
  gpus[2].jobs = {job(k8s("bert-w2c4d", "bert"), 3000, 300, 20, 23)};
  gpus[3].jobs = {job({}, 200, 320, 6, 24)};
  return gpus;
}

class WatchStore : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { fleet_ = new BackfilledFleet(store_fleet(), kSmallFleetSeconds); }
  static void TearDownTestSuite() {
    delete fleet_;
    fleet_ = nullptr;
  }
  void SetUp() override {
    if (!prometheus_available()) GTEST_SKIP() << "no prometheus binary";
    ASSERT_TRUE(fleet_->ready()) << fleet_->why_not_ready();
  }
  fleet::WatchRequest request(const std::string& key = "{namespace}/{job_name}") const {
    fleet::WatchRequest r;
    r.url = fleet_->url();
    r.lookback_s = kSmallFleetSeconds + 600;
    r.settle_s = 0;
    r.gpus = {"a100-80gb", "h100-sxm"};
    r.job_key = key;
    return r;
  }
  static const fleet::JobView* only_job(const fleet::FleetSnapshot& s, std::size_t gpu) {
    for (const auto& g : s.gpus)
      if (g.uuid == fleet_->gpus()[gpu].uuid) return g.jobs.size() == 1 ? &g.jobs[0] : nullptr;
    return nullptr;
  }
  static inline BackfilledFleet* fleet_ = nullptr;
  TempDir dir_{"watch-store"};
};

TEST_F(WatchStore, EndedJobsAreRecordedOnceUnderTheirKeyAndFormAMeasuredPair) {
  ServiceConfig config;
  config.store_path = (dir_ / "jobs.db").string();
  const Service service(config);
  // 50 min in: r50 has ended on the H100 and is running on the A100.
  double at = fleet_->start_unix_s() + 3000;
  auto w = std::make_unique<fleet::Watcher>(service, request(), [&at] { return at; });
  ASSERT_TRUE(w->pass().ok);
  {
    const fleet::FleetSnapshot s = w->snapshot();
    const fleet::JobView* h100 = only_job(s, 0);
    const fleet::JobView* a100 = only_job(s, 1);
    ASSERT_TRUE(h100 && a100) << fleet::fleet_json(s, 1);
    EXPECT_EQ(h100->job_key, "ml/r50");
    EXPECT_EQ(h100->labels.at("job_name"), "r50");
    ASSERT_TRUE(h100->found) << h100->why;
    EXPECT_GT(h100->store_run_id, 0);
    EXPECT_FALSE(a100->end_unix_s.has_value());
    EXPECT_EQ(a100->store_run_id, 0) << "a running job is not recorded";
  }
  {
    const JobStore store(config.store_path, StoreMode::kReadOnly);
    ASSERT_EQ(store.run_count(), 2u) << "the ended r50 and the bare-metal job";
  }
  // Past the end: r50 has ended on the A100 too; bert is still running.
  at = fleet_->end_unix_s() + 60;
  ASSERT_TRUE(w->pass().ok);
  const fleet::FleetSnapshot s = w->snapshot();
  const fleet::JobView* a100 = only_job(s, 1);
  ASSERT_NE(a100, nullptr);
  ASSERT_TRUE(a100->found) << a100->why;
  EXPECT_GT(a100->store_run_id, only_job(s, 0)->store_run_id);
  EXPECT_EQ(only_job(s, 2)->store_run_id, 0);
  EXPECT_EQ(only_job(s, 2)->job_key, "ml/bert") << "keyed while running, recorded once it ends";
  const fleet::JobView* bare = only_job(s, 3);
  ASSERT_NE(bare, nullptr);
  EXPECT_EQ(bare->job_key, "");
  EXPECT_GT(bare->store_run_id, 0) << "recorded without a key";
  EXPECT_NE(bare->why.find("no job key: the job has no 'namespace' label"), std::string::npos) << bare->why;
  {
    const JobStore store(config.store_path, StoreMode::kReadOnly);
    EXPECT_EQ(store.run_count(), 3u);
    const auto measured = store.measured_job_runs();
    ASSERT_EQ(measured.size(), 2u);
    EXPECT_EQ(measured[0].job_key, "ml/r50");
    EXPECT_EQ(measured[0].gpu, "h100-sxm");
    EXPECT_EQ(measured[1].gpu, "a100-80gb");
    // The H100 run predicted the A100; the A100 run checked it.
    const auto checked = store.feedback();
    ASSERT_EQ(checked.size(), 1u);
    EXPECT_EQ(checked[0].source_gpu, "h100-sxm");
    EXPECT_EQ(checked[0].target_gpu, "a100-80gb");
    EXPECT_NEAR(checked[0].measured_s, a100->epoch_s, 1e-6 * a100->epoch_s);
  }

  // A restarted watcher reads the same history: every ended job is in the store already.
  auto again = std::make_unique<fleet::Watcher>(service, request(), [&at] { return at; });
  ASSERT_TRUE(again->pass().ok);
  const fleet::FleetSnapshot t = again->snapshot();
  for (std::size_t g = 0; g < 4; ++g) EXPECT_EQ(only_job(t, g)->store_run_id, only_job(s, g)->store_run_id) << g;
  const JobStore store(config.store_path, StoreMode::kReadOnly);
  EXPECT_EQ(store.run_count(), 3u) << "nothing recorded twice";
  EXPECT_EQ(store.feedback().size(), 1u);
}

// dcgm-exporter's own pod label is enough: {pod|workload} drops the generated suffix, so the
// two runs of Job r50 (pods r50-x7k2p, r50-q9m4z) share a key and make a measured pair.
TEST_F(WatchStore, PodNamesLessTheirGeneratedSuffixPairTheRunsOfOneJob) {
  ServiceConfig config;
  config.store_path = (dir_ / "jobs.db").string();
  const Service service(config);
  const double at = fleet_->end_unix_s() + 60;
  fleet::Watcher w(service, request("{namespace}/{pod|workload}"), [at] { return at; });
  ASSERT_TRUE(w.pass().ok);
  const fleet::FleetSnapshot s = w.snapshot();
  EXPECT_EQ(only_job(s, 0)->job_key, "ml/r50");
  EXPECT_EQ(only_job(s, 1)->job_key, "ml/r50");
  EXPECT_EQ(only_job(s, 2)->job_key, "ml/bert");
  const JobStore store(config.store_path, StoreMode::kReadOnly);
  const auto measured = store.measured_job_runs();
  ASSERT_EQ(measured.size(), 2u);
  EXPECT_EQ(measured[0].job_key, measured[1].job_key);
  EXPECT_NE(measured[0].gpu, measured[1].gpu);
}

TEST_F(WatchStore, KeyWithoutAStoreIsRefused) {
  const Service service;
  try {
    fleet::Watcher w(service, request());
    FAIL() << "accepted";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), "job_key_template");
    EXPECT_NE(std::string(e.what()).find("job store"), std::string::npos) << e.what();
  }
}

}  // namespace
