// The fleet page of `epochcast serve --prometheus URL` in headless Chromium, against a real
// Prometheus holding a backfilled fleet (tests/integration/watch_fleet.hpp, as watch's tests):
// every GPU and job the watcher reports on /v1/fleet has its row on the page.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "../integration/watch_fleet.hpp"
#include "webdriver.hpp"

namespace epochcast {
namespace {

using testing::Process;
using testing::TempDir;
using testing::WebDriver;

class FleetLive : public testing::SmallFleetSuite<> {
 protected:
  void SetUp() override {
    if (!testing::browser_available()) GTEST_SKIP() << "chromium or chromedriver is not installed";
    SmallFleetSuite::SetUp();
  }
};

TEST_F(FleetLive, ServeWithAWatcherListsItsFleetOnThePage) {
  TempDir dir("fleet-live");
  Process serve({EPOCHCAST_CLI, "serve", "--listen", "127.0.0.1:0", "--prometheus", fleet_->url(), "--lookback", "3h",
                 "--gpus", "l4"},
                {}, dir.path());
  const int port = serve.serving_port(120);
  ASSERT_GT(port, 0) << serve.err();
  httplib::Client client("127.0.0.1", port);
  const nlohmann::json fleet = testing::fleet_after_first_pass(client);
  ASSERT_GE(fleet.value("passes", 0), 1) << serve.err();
  ASSERT_EQ(fleet["gpus"].size(), 6u);
  int jobs = 0, without_jobs = 0;
  for (const auto& g : fleet["gpus"]) {
    jobs += static_cast<int>(g["jobs"].size());
    without_jobs += g["jobs"].empty();
  }
  ASSERT_GT(jobs, 0);
  WebDriver b(dir.path());
  b.go("http://127.0.0.1:" + std::to_string(port) + "/fleet");
  b.wait_for("#fleet-table");
  EXPECT_EQ(b.script("return document.querySelectorAll('#fleet-table > tbody > tr.job').length;").get<int>(), jobs);
  EXPECT_EQ(b.script("return document.querySelectorAll('#fleet-table > tbody > tr:not(.predictions-row)').length;")
                .get<int>(),
            jobs + without_jobs);
  EXPECT_EQ(b.text(*b.find("#fleet-summary")).rfind(std::to_string(fleet["gpus"].size()) + " GPUs, " +
                                                        std::to_string(jobs) + " jobs", 0),
            0u);
  // Each job's row: a found period shows the watched target's prediction; a job without one
  // says why in its place.
  int found = 0, not_found = 0;
  for (const auto& g : fleet["gpus"])
    for (const auto& job : g["jobs"]) {
      const auto row = b.find("tr[data-job='" + job["id"].get<std::string>() + "']");
      ASSERT_TRUE(row) << job.dump();
      const std::string text = b.text(*row);
      if (job["found"].get<bool>()) {
        ++found;
        EXPECT_NE(text.find("l4 "), std::string::npos) << text;
      } else {
        ++not_found;
        EXPECT_NE(text.find("no prediction"), std::string::npos) << text;
      }
    }
  EXPECT_GT(found, 0);
  EXPECT_GT(not_found, 0);  // the fleet's job without an epoch signature
  const std::string status = b.text(*b.find("#fleet-status"));
  EXPECT_NE(status.find(fleet_->url()), std::string::npos) << status;
  EXPECT_FALSE(b.find("#fleet-status.bad")) << status;
  serve.signal(SIGTERM);
  EXPECT_EQ(serve.wait(30), 0) << serve.err();
}

}  // namespace
}  // namespace epochcast
