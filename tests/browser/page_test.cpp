// The web page of `epochcast serve` in a real headless Chromium driven through chromedriver
// (W3C WebDriver): a trace chosen in the page's own file field is uploaded by the page and its
// report appears; errors are shown on the page; the fleet page says when no fleet is watched.
// The screenshots are decoded and must not be blank. Label `browser` (ctest -L browser).
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <chrono>

#include "../integration/png_stats.hpp"
#include "webdriver.hpp"

namespace epochcast {
namespace {

namespace fs = std::filesystem;
using testing::Process;
using testing::TempDir;
using testing::WebDriver;

std::string h200(const std::string& name) { return std::string(EPOCHCAST_TEST_DATA) + "/h200/" + name; }

// One server and one browser for the suite: the default model loads once, Chromium starts once.
class Page : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::browser_available()) return;
    dir_ = new TempDir("page");
    server_ = new Process({EPOCHCAST_CLI, "serve", "--listen", "127.0.0.1:0", "--threads", "4"}, {}, dir_->path());
    port_ = server_->serving_port(120);
    browser_ = new WebDriver(dir_->path());
  }
  static void TearDownTestSuite() {
    delete browser_;
    delete server_;
    delete dir_;
    browser_ = nullptr, server_ = nullptr, dir_ = nullptr;
  }
  void SetUp() override {
    if (!testing::browser_available()) GTEST_SKIP() << "chromium or chromedriver is not installed";
    ASSERT_GT(port_, 0) << server_->err();
  }
  static std::string url(const std::string& path) { return "http://127.0.0.1:" + std::to_string(port_) + path; }

  // Chooses the files in the page's form and submits it; waits until the report or an error shows.
  static void upload(const std::string& trace, const std::string& host = "") {
    WebDriver& b = *browser_;
    b.go(url("/"));
    b.send_keys(b.wait_for("#trace"), trace);
    if (!host.empty()) b.send_keys(b.wait_for("#host"), host);
    b.click(b.wait_for("#submit"));
    b.wait_for("#result:not([hidden]), #error:not([hidden])", 60);
  }
  static nlohmann::json screenshot_stats(const std::string& name) {
    const fs::path png = dir_->path() / (name + ".png");
    std::ofstream(png, std::ios::binary) << browser_->screenshot_png();
    return testing::png_stats(png, dir_->path());
  }

  static TempDir* dir_;
  static Process* server_;
  static WebDriver* browser_;
  static int port_;
};

TempDir* Page::dir_ = nullptr;
Process* Page::server_ = nullptr;
WebDriver* Page::browser_ = nullptr;
int Page::port_ = -1;

TEST_F(Page, UploadFromThePageShowsTheReport) {
  // The host field stays empty: the browser sends it as an empty part, which means no host log.
  upload(h200("vgg16_224_bs32_fp32.smi.csv"));
  WebDriver& b = *browser_;
  ASSERT_FALSE(b.find("#error:not([hidden])")) << b.text(*b.find("#error"));
  b.frame(b.wait_for("#report"));
  const std::string answer = b.text(b.wait_for("#answer"));
  EXPECT_NE(answer.find("Fastest"), std::string::npos) << answer;
  EXPECT_NE(answer.find("cheapest"), std::string::npos) << answer;
  const int bars = b.script("return document.querySelectorAll('#prediction-chart .bar').length;").get<int>();
  EXPECT_GT(bars, 5);
  EXPECT_GT(b.script("return document.querySelectorAll('#trace-chart .epoch-marker').length;").get<int>(), 3);
  EXPECT_GT(b.script("return document.querySelectorAll('#cost-table tbody tr').length;").get<int>(), 3);
  // No table cell wraps: each is one line high.
  const nlohmann::json wrapped = b.script(R"JS(
    const out = [];
    for (const c of document.querySelectorAll('td, th')) {
      const style = getComputedStyle(c);
      const line = parseFloat(style.lineHeight) || 1.45 * parseFloat(style.fontSize);
      if (style.whiteSpace !== 'nowrap' || c.getClientRects()[0].height > 1.9 * line + 8) out.push(c.textContent);
    }
    return out;)JS");
  EXPECT_TRUE(wrapped.empty()) << wrapped.dump();
  b.frame(std::nullopt);
  const nlohmann::json stats = screenshot_stats("upload");
  ASSERT_FALSE(stats.is_null());
  EXPECT_GT(stats["distinct"].get<int>(), 20) << stats.dump();
  EXPECT_GT(stats["non_background_fraction"].get<double>(), 0.02) << stats.dump();
}

TEST_F(Page, HostLogFromThePageReachesTheDetector) {
  // resnet18's epochs show only with its host CPU (docs/detection.md): found means the part arrived.
  upload(h200("resnet18_32_bs128_cpuloader.smi.csv"), h200("resnet18_32_bs128_cpuloader.host.csv"));
  WebDriver& b = *browser_;
  ASSERT_FALSE(b.find("#error:not([hidden])")) << b.text(*b.find("#error"));
  b.frame(b.wait_for("#report"));
  const std::string source = b.text(b.wait_for("#source"));
  EXPECT_NE(source.find("epochs, period"), std::string::npos) << source;
  EXPECT_EQ(b.script("return document.querySelectorAll('#trace-chart [data-channel=\"host_cpu_util_pct\"]').length;").get<int>(), 1);
  b.frame(std::nullopt);
}

// The page's options become the request's query: the catalog fills "Recorded on", the epochs
// to price reach the cost table.
TEST_F(Page, OptionsReachTheRequest) {
  WebDriver& b = *browser_;
  b.go(url("/"));
  b.send_keys(b.wait_for("#trace"), h200("resnet50_224_bs256_bf16.smi.csv"));
  // The GPU list arrives from GET /v1/gpus after the page loads.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (b.script("return document.querySelectorAll('#source-gpu option').length;").get<int>() < 6 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_GE(b.script("return document.querySelectorAll('#source-gpu option[value=\"h200\"]').length;").get<int>(), 1);
  b.script("document.getElementById('epochs').value = '25'; document.getElementById('precision').value = 'bf16';");
  b.click(b.wait_for("#submit"));
  b.wait_for("#result:not([hidden]), #error:not([hidden])", 60);
  ASSERT_FALSE(b.find("#error:not([hidden])")) << b.text(*b.find("#error"));
  b.frame(b.wait_for("#report"));
  const std::string head = b.text(b.wait_for("#cost-table thead"));
  EXPECT_NE(head.find("$ for 25 epochs"), std::string::npos) << head;
  b.frame(std::nullopt);
}

TEST_F(Page, BadTraceShowsTheErrorOnThePage) {
  upload(std::string(EPOCHCAST_TEST_DATA) + "/bad/text_in_number.smi.csv");
  WebDriver& b = *browser_;
  const auto error = b.find("#error:not([hidden])");
  ASSERT_TRUE(error) << "no error shown";
  const std::string text = b.text(*error);
  // The file, the line and the field, as the CLI says it.
  EXPECT_NE(text.find("text_in_number.smi.csv:6"), std::string::npos) << text;
  EXPECT_NE(text.find("power.draw"), std::string::npos) << text;
  EXPECT_TRUE(b.find("#result[hidden]")) << "a report is shown beside the error";
}

TEST_F(Page, FleetPageSaysNoFleetIsWatched) {
  WebDriver& b = *browser_;
  b.go(url("/fleet"));
  const std::string text = b.text(b.wait_for("#no-fleet"));
  EXPECT_NE(text.find("No fleet watched"), std::string::npos) << text;
  EXPECT_FALSE(b.find("#fleet-table"));
}

}  // namespace
}  // namespace epochcast
