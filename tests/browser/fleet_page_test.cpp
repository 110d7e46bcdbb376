// The fleet page in headless Chromium, against the page routes of the server library and a
// GET /v1/fleet that answers a fixture of the contract agreed with `epochcast watch`
// (tests/data/fleet/fleet.json, with the extra fields watch writes: passes, queries_total,
// analysed, epoch_s null when not found): a fixture reaches the cases a small real fleet does not
// (hostile labels, errors, shards). The page against a live watcher is fleet_live_test.cpp; the
// "no fleet watched" case runs against the real `serve` in page_test.cpp.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "../integration/png_stats.hpp"
#include "web_assets.hpp"
#include "webdriver.hpp"

namespace epochcast {
namespace {

using testing::TempDir;
using testing::WebDriver;

class FleetPage : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::browser_available()) GTEST_SKIP() << "chromium or chromedriver is not installed";
    server::add_web_routes(http_);
    http_.Get("/v1/fleet", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(mutex_);
      res.set_content(fleet_, "application/json");
    });
    port_ = http_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { http_.listen_after_bind(); });
    while (!http_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  void TearDown() override {
    http_.stop();
    if (thread_.joinable()) thread_.join();
  }
  void answer(std::string fleet) {
    std::lock_guard lock(mutex_);
    fleet_ = std::move(fleet);
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

  TempDir dir_{"fleet-page"};
  httplib::Server http_;
  std::thread thread_;
  int port_ = -1;
  std::mutex mutex_;
  std::string fleet_ = testing::read_file(std::string(EPOCHCAST_TEST_DATA) + "/fleet/fleet.json");
};

TEST_F(FleetPage, ListsEveryGpuAndJobWithItsPredictions) {
  WebDriver b(dir_.path());
  b.go(url("/fleet"));
  b.wait_for("#fleet-table");
  EXPECT_EQ(b.script("return document.querySelectorAll('#fleet-table > tbody > tr:not(.predictions-row)').length;").get<int>(), 4);  // 3 jobs + the idle GPU
  EXPECT_EQ(b.script("return document.querySelectorAll('#fleet-table > tbody > tr.job').length;").get<int>(), 3);
  EXPECT_EQ(b.text(*b.find("#fleet-summary")), "3 GPUs, 3 jobs; 2 busy.");
  const std::string status = b.text(*b.find("#fleet-status"));
  EXPECT_NE(status.find("http://prometheus.example:9090"), std::string::npos) << status;
  EXPECT_NE(status.find("shard 1/2"), std::string::npos) << status;
  EXPECT_NE(status.find("3 errors"), std::string::npos) << status;
  EXPECT_NE(status.find("last pass 12-02 00:10 UTC"), std::string::npos) << status;
  const std::string job1 = b.text(*b.find("tr[data-job='job-1']"));
  EXPECT_NE(job1.find("vision / resnet-train-0 / trainer"), std::string::npos) << job1;
  EXPECT_NE(job1.find("12.3 s (0.93)"), std::string::npos) << job1;
  EXPECT_NE(job1.find("b200 7.50 s"), std::string::npos) << job1;                    // fastest
  EXPECT_NE(job1.find("t4 on aws g4dn.xlarge $0.0140"), std::string::npos) << job1;  // cheapest
  // A job without a period says why, in place of predictions.
  const std::string job2 = b.text(*b.find("tr[data-job='job-2']"));
  EXPECT_NE(job2.find("no prediction: no epochs detected (no periodic structure in 360 samples)"), std::string::npos) << job2;
  // Labels are text: the <img> in a pod name is shown, never made.
  EXPECT_NE(job2.find("web&co / <img src=x onerror=alert(1)> / \"quoted\""), std::string::npos) << job2;
  EXPECT_EQ(b.script("return document.querySelectorAll('#fleet img').length;").get<int>(), 0);
  const std::string idle = b.text(*b.find("tr[data-uuid='GPU-bbbb']"));
  EXPECT_NE(idle.find("not in the catalog"), std::string::npos) << idle;
  EXPECT_NE(idle.find("no job seen"), std::string::npos) << idle;
  const std::string png = (dir_.path() / "fleet.png").string();
  std::ofstream(png, std::ios::binary) << b.screenshot_png();
  const nlohmann::json stats = testing::png_stats(png, dir_.path());
  ASSERT_FALSE(stats.is_null());
  EXPECT_GT(stats["distinct"].get<int>(), 20) << stats.dump();
  EXPECT_GT(stats["non_background_fraction"].get<double>(), 0.02) << stats.dump();
  // The predictions of a job unfold under it.
  const std::string shown = "return document.querySelectorAll(\"tr[data-predictions-of='job-1']:not([hidden]) tr[data-target-gpu]\").length;";
  EXPECT_EQ(b.script(shown).get<int>(), 0);
  b.click(*b.find("tr[data-job='job-1'] button.toggle"));
  EXPECT_EQ(b.script(shown).get<int>(), 3);
}

TEST_F(FleetPage, AWatcherWithNoGpusSaysSoInsteadOfAnEmptyTable) {
  answer(R"({"source": "http://p:9090", "shard": "1/1", "every_s": 60, "last_pass": null, "errors_total": 0, "gpus": []})");
  WebDriver b(dir_.path());
  b.go(url("/fleet"));
  const std::string text = b.text(b.wait_for("#no-gpus"));
  EXPECT_NE(text.find("has not finished its first pass"), std::string::npos) << text;
  EXPECT_FALSE(b.find("#fleet-table"));
}

TEST_F(FleetPage, AnErrorAnswerIsShown) {
  answer("not json");
  WebDriver b(dir_.path());
  b.go(url("/fleet"));
  b.wait_for("#fleet-status.bad");
  const std::string text = b.text(*b.find("#fleet-status"));
  EXPECT_NE(text.find("Cannot read the fleet"), std::string::npos) << text;
}

// A snapshot a real watch answered against a real Prometheus (tests/data/fleet/README.md):
// every GPU and job has its row, nothing reads as an error.
TEST_F(FleetPage, RendersARealWatchSnapshot) {
  const std::string text = testing::read_file(std::string(EPOCHCAST_TEST_DATA) + "/fleet/watch_snapshot.json");
  const nlohmann::json j = nlohmann::json::parse(text);
  int jobs = 0, idle_without_jobs = 0;
  for (const auto& g : j["gpus"]) {
    jobs += static_cast<int>(g["jobs"].size());
    idle_without_jobs += g["jobs"].empty();
  }
  ASSERT_GT(jobs, 5);
  answer(text);
  WebDriver b(dir_.path());
  b.go(url("/fleet"));
  b.wait_for("#fleet-table");
  EXPECT_EQ(b.script("return document.querySelectorAll('#fleet-table > tbody > tr.job').length;").get<int>(), jobs);
  EXPECT_EQ(b.script("return document.querySelectorAll('#fleet-table > tbody > tr:not(.predictions-row)').length;")
                .get<int>(),
            jobs + idle_without_jobs);
  EXPECT_FALSE(b.find("#fleet-status.bad")) << b.text(*b.find("#fleet-status"));
  EXPECT_EQ(b.text(*b.find("#fleet-summary")).rfind(std::to_string(j["gpus"].size()) + " GPUs, " + std::to_string(jobs) + " jobs", 0), 0u);
  const std::string png = (dir_.path() / "fleet_real.png").string();
  std::ofstream(png, std::ios::binary) << b.screenshot_png();
  const nlohmann::json stats = testing::png_stats(png, dir_.path());
  ASSERT_FALSE(stats.is_null());
  EXPECT_GT(stats["non_background_fraction"].get<double>(), 0.02) << stats.dump();
}

}  // namespace
}  // namespace epochcast
