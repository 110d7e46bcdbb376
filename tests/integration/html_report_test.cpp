// The HTML report opened in a real browser (Debian chromium, headless): the DOM it builds holds
// the report's parts, and the screenshot shows them (not a blank page).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>

#include "epochcast/service/render.hpp"
#include "png_stats.hpp"

namespace epochcast {
#include "cli_run.hpp"

namespace {

namespace fs = std::filesystem;

constexpr const char* kChromium = "/usr/bin/chromium";



std::string run_capture(const std::string& command) { return epochcast::testing::run_command(command).out; }

fs::path fresh_dir(const std::string& name) {
  std::random_device rd;
  const fs::path dir = fs::temp_directory_path() / ("epochcast-" + name + "-" + std::to_string(rd()));
  fs::create_directories(dir);
  return dir;
}

std::string chromium_flags(const fs::path& profile) {
  return "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking "
         "--disable-component-update --disable-sync --user-data-dir=" + profile.string();
}

std::string dump_dom(const fs::path& html, const fs::path& dir) {
  return run_capture("timeout 90 " + std::string(kChromium) + " " + chromium_flags(dir / "profile-dom") +
                     " --dump-dom file://" + html.string() + " 2>/dev/null");
}

nlohmann::json screenshot_stats(const fs::path& html, const fs::path& dir) {
  const fs::path png = dir / "page.png";
  const std::string cmd = "timeout 90 " + std::string(kChromium) + " " + chromium_flags(dir / "profile-shot") +
                          " --screenshot=" + png.string() + " --window-size=1200,1800 file://" + html.string() +
                          " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0 || !fs::exists(png)) return nullptr;
  const nlohmann::json stats = testing::png_stats(png, dir);
  if (stats.is_null()) ADD_FAILURE() << "png_stats could not read " << png;
  return stats;
}

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + 1)) ++n;
  return n;
}

PredictReport hand_built_report() {
  PredictReport r;
  r.source.gpu = "h200";
  r.source.gpu_name = "NVIDIA H200 SXM 141GB";
  r.source.gpu_name_in_trace = "NVIDIA H200";
  r.source.trace = "synthetic.csv";
  r.source.measured_epoch_s = 5;
  r.source.detected.found = true;
  r.source.detected.period_s = 5;
  r.source.detected.confidence = 0.95;
  for (int i = 0; i < 6; ++i) r.source.detected.epochs.push_back({10.0 + 5 * i, 15.0 + 5 * i});
  const std::array<std::pair<const char*, double>, 4> gpus = {{{"h200", 5}, {"a100-80gb", 9}, {"v100", 21}, {"t4", 48}}};
  for (const auto& [id, s] : gpus) {
    GpuPrediction p;
    p.gpu = id;
    p.gpu_name = id;
    p.epoch_s = s;
    p.measured = std::string(id) == "h200";
    p.in_training_data = !p.measured && std::string(id) != "a100-80gb";
    p.interval_lo_s = p.measured ? s : s * 0.8;
    p.interval_hi_s = p.measured ? s : s * 1.25;
    if (!p.measured) {
      InstanceCost c;
      c.provider = "aws";
      c.instance = std::string(id) + ".xlarge";
      c.gpu_share_usd_h = 1.0;
      c.usd_per_epoch = s / 3600;
      c.usd_total = 10 * s / 3600;
      c.as_of = "2024-06-01";
      p.instances.push_back(c);
    }
    r.predictions.push_back(p);
  }
  r.warnings = {"source GPU h200 is never a source in the training data"};
  return r;
}

Trace hand_built_trace() {
  Trace t;
  t.source = "synthetic.csv";
  t.format = "canonical";
  for (int i = 0; i < 450; ++i) t.time_s.push_back(i * 0.1);
  t.channel(Metric::kGpuUtil);
  t.channel(Metric::kPower);
  for (int i = 0; i < 450; ++i) {
    const double s = i * 0.1;
    const bool busy = s >= 10 && s < 40;
    const double phase = std::fmod(s - 10, 5.0);
    t.find(Metric::kGpuUtil)->values[i] = busy ? (phase > 4.5 ? 30 : 98) : 0;
    t.find(Metric::kPower)->values[i] = busy ? (phase > 4.5 ? 200 : 650) : 120;
  }
  return t;
}

TEST(HtmlReport, HandBuiltReportRendersInChromium) {
  if (!fs::exists(kChromium)) GTEST_SKIP() << "chromium is not installed";
  const fs::path dir = fresh_dir("html");
  const fs::path html = dir / "report.html";
  write_html_report(html.string(), hand_built_report(), hand_built_trace());

  const std::string dom = dump_dom(html, dir);
  ASSERT_FALSE(dom.empty()) << "chromium printed no DOM";
  EXPECT_NE(dom.find("id=\"trace-chart\""), std::string::npos);
  EXPECT_NE(dom.find("id=\"prediction-chart\""), std::string::npos);
  EXPECT_NE(dom.find("id=\"cost-table\""), std::string::npos);
  EXPECT_NE(dom.find("id=\"validation\""), std::string::npos);
  EXPECT_EQ(count(dom, "class=\"epoch-marker\""), 7u);  // 6 starts + the last end
  EXPECT_EQ(count(dom, "class=\"bar"), 4u);
  EXPECT_EQ(count(dom, "class=\"bar measured\""), 1u);
  EXPECT_EQ(count(dom, "<tr data-gpu="), 3u);  // the measured H200 row has no price

  const nlohmann::json stats = screenshot_stats(html, dir);
  ASSERT_FALSE(stats.is_null()) << "no screenshot";
  EXPECT_EQ(stats["width"], 1200);
  EXPECT_GT(stats["distinct"].get<int>(), 20);
  EXPECT_GT(stats["non_background_fraction"].get<double>(), 0.02);
  EXPECT_GT(stats["bar_pixels"].get<int>(), 500) << stats.dump();
  EXPECT_GT(stats["measured_pixels"].get<int>(), 100) << stats.dump();
  EXPECT_GT(stats["epoch_span_pixels"].get<int>(), 1000) << stats.dump();
  EXPECT_GT(stats["line_pixels"].get<int>(), 100) << stats.dump();  // the utilization curve is drawn
  fs::remove_all(dir);
}

TEST(HtmlReport, BlankPageFailsThePixelCheck) {
  // The checker must be able to fail: a page with nothing on it has no bar pixels.
  if (!fs::exists(kChromium)) GTEST_SKIP() << "chromium is not installed";
  const fs::path dir = fresh_dir("blank");
  const fs::path html = dir / "blank.html";
  std::ofstream(html) << "<!DOCTYPE html><html><body style=\"background:#fff\"></body></html>";
  const nlohmann::json stats = screenshot_stats(html, dir);
  ASSERT_FALSE(stats.is_null());
  EXPECT_LT(stats["non_background_fraction"].get<double>(), 0.001);
  EXPECT_EQ(stats["bar_pixels"].get<int>(), 0);
  EXPECT_EQ(stats["line_pixels"].get<int>(), 0);
  fs::remove_all(dir);
}

TEST(HtmlReport, PredictCommandWritesAReportThatRenders) {
  if (!fs::exists(kChromium)) GTEST_SKIP() << "chromium is not installed";
  const fs::path dir = fresh_dir("cli-html");
  const fs::path html = dir / "vgg16.html";
  const std::string trace = std::string(EPOCHCAST_TEST_DATA) + "/h200/vgg16_224_bs32_fp32.smi.csv";
  const std::string out = run_capture(std::string(EPOCHCAST_CLI) + " predict " + trace + " --json --html " +
                                      html.string() + " 2>/dev/null");
  const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  ASSERT_TRUE(fs::exists(html));
  const std::size_t predictions = j["predictions"].size();
  ASSERT_GT(predictions, 1u);
  const std::string dom = dump_dom(html, dir);
  EXPECT_EQ(count(dom, "class=\"bar"), predictions);
  EXPECT_EQ(count(dom, "class=\"epoch-marker\""), j["source"]["detected"]["epochs"].size() + 1);
  EXPECT_NE(dom.find("id=\"cost-table\""), std::string::npos);
  const nlohmann::json stats = screenshot_stats(html, dir);
  ASSERT_FALSE(stats.is_null());
  EXPECT_GT(stats["bar_pixels"].get<int>(), 500) << stats.dump();
  EXPECT_GT(stats["epoch_span_pixels"].get<int>(), 1000) << stats.dump();
  EXPECT_GT(stats["line_pixels"].get<int>(), 100) << stats.dump();
  fs::remove_all(dir);
}

// `predict DIR --html FILE`: one page for the folder, every trace's answer first, then a
// section per trace; what the JSON says is what the page says.
TEST(HtmlReport, PredictFolderWritesOneFleetReport) {
  if (!fs::exists(kChromium)) GTEST_SKIP() << "chromium is not installed";
  const fs::path dir = fresh_dir("batch-html");
  const fs::path html = dir / "fleet.html";
  const std::string folder = std::string(EPOCHCAST_TEST_DATA) + "/h200";
  const std::string out = run_capture(std::string(EPOCHCAST_CLI) + " predict " + folder + " --json --html " +
                                      html.string() + " 2>/dev/null");
  const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  ASSERT_TRUE(fs::exists(html));
  const std::size_t traces = j["summary"].size();
  ASSERT_GE(traces, 6u);
  const std::string dom = dump_dom(html, dir);
  ASSERT_FALSE(dom.empty());
  EXPECT_EQ(count(dom, "<section class=\"trace\""), traces);
  const auto answers = dom.find("id=\"answers\"");
  ASSERT_NE(answers, std::string::npos);
  std::size_t predicted = 0;
  for (const auto& item : j["summary"]) {
    const std::string answer = item["answer"].get<std::string>();
    // Each answer is in the list up top (escaped as the page escapes: no < > & " ' in these).
    const auto at = dom.find(answer.substr(0, 60));
    EXPECT_NE(at, std::string::npos) << answer;
    EXPECT_GT(at, answers);
    predicted += answer.rfind("Fastest: ", 0) == 0;
  }
  EXPECT_GE(predicted, 3u);
  EXPECT_EQ(count(dom, "<svg class=\"ec-chart ec-bars\""), predicted);  // no chart where nothing was predicted
  fs::remove_all(dir);
}

}  // namespace
}  // namespace epochcast
