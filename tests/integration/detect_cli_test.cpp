// `epochcast detect` through the built CLI: the DESIGN.md JSON object on a real trace, bad
// files' exit status and located message, --plot, and --follow on a file that grows while the
// CLI reads it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_run.hpp"

namespace {

using CliRun = epochcast::testing::CommandResult;
CliRun run(const std::string& args) { return epochcast::testing::run_cli(args + " 2>&1"); }

const std::string kData = EPOCHCAST_TEST_DATA;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Mean epoch seconds from truth.json (end - start of each epoch).
double truth_period(const std::string& path) {
  const auto j = nlohmann::json::parse(slurp(path));
  return j["mean_epoch_s"].get<double>();
}

std::filesystem::path temp_dir() {
  auto dir = std::filesystem::temp_directory_path() /
             ("epochcast_detect_cli_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(DetectCli, JsonIsTheDesignObjectWithTheRightPeriod) {
  const std::string base = kData + "/h200/resnet50_224_bs256_bf16";
  const CliRun r = run("detect " + base + ".smi.csv --host " + base + ".host.csv --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"found", "period_s", "confidence", "epochs", "first_timestamp", "interval_s", "channels",
                          "reason"})
    EXPECT_TRUE(j.contains(key)) << key << " missing in " << r.out;
  ASSERT_TRUE(j["found"].get<bool>()) << r.out;
  const double truth = truth_period(base + ".truth.json");
  EXPECT_LE(std::abs(j["period_s"].get<double>() - truth) / truth, 0.03) << r.out;
  const double conf = j["confidence"];
  EXPECT_GE(conf, 0.0);
  EXPECT_LE(conf, 1.0);
  EXPECT_NEAR(j["interval_s"].get<double>(), 0.1, 0.01);
  EXPECT_EQ(j["first_timestamp"].get<std::string>().substr(0, 11), "2026/11/30 ");
  ASSERT_GE(j["epochs"].size(), 3u);
  double prev_end = -1;
  for (const auto& e : j["epochs"]) {
    const double s = e["start_s"], en = e["end_s"];
    EXPECT_LT(s, en);
    EXPECT_GE(s, prev_end - 1e-9);  // in time order, not overlapping
    prev_end = en;
  }
  EXPECT_FALSE(j["channels"].empty());
}

TEST(DetectCli, HalfSecondTraceFoundFromBoundaryEvents) {
  const std::string base = kData + "/h200/effnetb0_224_bs64_ckpt_500ms";
  const CliRun r = run("detect " + base + ".smi.csv --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j["found"].get<bool>()) << r.out;
  const double truth = truth_period(base + ".truth.json");
  EXPECT_LE(std::abs(j["period_s"].get<double>() - truth) / truth, 0.03) << r.out;
  EXPECT_NEAR(j["interval_s"].get<double>(), 0.5, 0.01);
  EXPECT_GE(j["epochs"].size(), 3u);
}

TEST(DetectCli, NoSignatureTraceIsNotFoundWithNullPeriod) {
  const CliRun r = run("detect " + kData + "/h200/mobilenetv2_224_bs128_noval.smi.csv --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["found"].get<bool>()) << r.out;
  EXPECT_TRUE(j["period_s"].is_null()) << r.out;
  EXPECT_FALSE(j["reason"].get<std::string>().empty());
}

TEST(DetectCli, BadFilesExitNonZeroWithLocatedMessage) {
  const CliRun r = run("detect " + kData + "/bad/text_in_number.smi.csv");
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("text_in_number.smi.csv:6:61"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("power.draw"), std::string::npos) << r.out;
  const CliRun j = run("detect " + kData + "/bad/binary_garbage.bin --json");
  EXPECT_NE(j.status, 0) << j.out;
  const auto err = nlohmann::json::parse(j.out);
  EXPECT_EQ(err["error"]["code"], "parse") << j.out;
  const CliRun missing = run("detect " + kData + "/bad/no_such_file.smi.csv");
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.out.find("no_such_file.smi.csv"), std::string::npos) << missing.out;
}

TEST(DetectCli, PlotWritesAnSvgWithBoundaries) {
  const auto dir = temp_dir();
  const std::string svg = (dir / "vgg.svg").string();
  const std::string base = kData + "/h200/vgg16_224_bs32_fp32";
  const CliRun r = run("detect " + base + ".smi.csv --plot " + svg);
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string text = slurp(svg);
  EXPECT_NE(text.find("<svg"), std::string::npos);
  EXPECT_NE(text.find("</svg>"), std::string::npos);
  EXPECT_NE(text.find("gpu_util_pct"), std::string::npos) << text.substr(0, 400);
  // One marker per boundary (each start and the last end): the JSON's epochs + 1.
  const auto j = nlohmann::json::parse(run("detect " + base + ".smi.csv --json").out);
  std::size_t markers = 0;
  for (auto at = text.find("class=\"epoch-marker"); at != std::string::npos; at = text.find("class=\"epoch-marker", at + 1))
    ++markers;
  ASSERT_TRUE(j["found"].get<bool>());
  EXPECT_EQ(markers, j["epochs"].size() + 1) << text.substr(0, 400);
  const CliRun png = run("detect " + base + ".smi.csv --plot " + (dir / "x.png").string());
  EXPECT_NE(png.status, 0) << png.out;
  // A NaN timeout would make --follow never stop: refused up front.
  EXPECT_EQ(run("detect " + base + ".smi.csv --follow --idle-timeout nan").status, 2);
  std::filesystem::remove_all(dir);
}

TEST(DetectCli, FollowPrintsUpdatedEstimatesOnAGrowingFileAndStopsWhenIdle) {
  const auto dir = temp_dir();
  const std::string growing = (dir / "growing.smi.csv").string();
  const std::string base = kData + "/h200/vgg16_224_bs32_fp32";
  std::vector<std::string> lines;
  {
    std::istringstream in(slurp(base + ".smi.csv"));
    for (std::string line; std::getline(in, line);) lines.push_back(line + "\n");
  }
  ASSERT_GT(lines.size(), 200u);
  constexpr std::size_t kFirstChunk = 25;  // header + the first rows: too short for a period
  {
    std::ofstream first(growing);
    for (std::size_t i = 0; i <= kFirstChunk; ++i) first << lines[i];
  }
  const std::string cmd = std::string(EPOCHCAST_CLI) + " detect " + growing +
                          " --follow --idle-timeout 1.5 --poll-ms 20 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  const auto started = std::chrono::steady_clock::now();
  // Grow the file only after the first estimate is out, so a slow start cannot skip it.
  std::string out;
  std::array<char, 4096> buf{};
  ASSERT_NE(std::fgets(buf.data(), static_cast<int>(buf.size()), pipe), nullptr);
  out += buf.data();
  std::thread writer([&] {
    std::size_t i = kFirstChunk + 1;
    while (i < lines.size()) {
      std::ofstream out(growing, std::ios::app);
      for (std::size_t k = 0; k < 25 && i < lines.size(); ++k, ++i) out << lines[i];
      out.close();
      std::this_thread::sleep_for(std::chrono::milliseconds(60));
    }
  });
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  writer.join();
  const int st = ::pclose(pipe);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << out;
  // Several estimates as the file grew: first none, then a period.
  std::vector<std::string> got;
  std::istringstream s(out);
  for (std::string line; std::getline(s, line);)
    if (line.rfind("t=", 0) == 0) got.push_back(line);
  ASSERT_GE(got.size(), 2u) << out;
  EXPECT_NE(got.front().find("no period yet"), std::string::npos) << out;
  EXPECT_NE(got.back().find("period="), std::string::npos) << out;
  const auto at = got.back().find("period=");
  const double period = std::stod(got.back().substr(at + 7));
  const double truth = truth_period(base + ".truth.json");
  EXPECT_LE(std::abs(period - truth) / truth, 0.03) << got.back();
  // The sample count grows from line to line.
  auto samples = [](const std::string& l) { return std::stoul(l.substr(l.find("samples=") + 8)); };
  EXPECT_LT(samples(got.front()), samples(got.back()));
  // It ended on its own, after the writer stopped and the idle timeout passed.
  const double writing_s = static_cast<double>(lines.size() / 25) * 0.06;
  EXPECT_GE(elapsed, writing_s + 1.0) << out;
  EXPECT_LT(elapsed, writing_s + 20.0) << out;
  std::filesystem::remove_all(dir);
}

}  // namespace

// --null-test reaches the detector through the service: the null-tested search confirms the
// CPU-loader run (its default-mode confidence is lower) and abstains where the default finds a
// 4-epoch period it cannot tell from its nulls, or where there is no signature at all.
TEST(DetectCli, NullTestFlagSelectsTheNullTestedSearch) {
  const auto detect = [](const std::string& name, const std::string& flags) {
    const CliRun r = run("detect " + kData + "/h200/" + name + ".smi.csv --json " + flags);
    EXPECT_EQ(r.status, 0) << r.out;
    const auto start = r.out.find('{');  // stderr (host-log note) comes first in the merged output
    return nlohmann::json::parse(r.out.substr(start == std::string::npos ? 0 : start));
  };
  const auto r18 = detect("resnet18_32_bs128_cpuloader", "--null-test");
  ASSERT_TRUE(r18["found"].get<bool>());
  const double truth = truth_period(kData + "/h200/resnet18_32_bs128_cpuloader.truth.json");
  EXPECT_LE(std::abs(r18["period_s"].get<double>() - truth) / truth, 0.03);
  EXPECT_GE(r18["confidence"].get<double>(), 0.85);
  EXPECT_NE(r18["reason"].get<std::string>().find("whole-region"), std::string::npos) << r18["reason"];

  EXPECT_TRUE(detect("vgg16_224_bs32_fp32", "")["found"].get<bool>());
  EXPECT_FALSE(detect("vgg16_224_bs32_fp32", "--null-test")["found"].get<bool>());
  EXPECT_FALSE(detect("mobilenetv2_224_bs128_noval", "--null-test")["found"].get<bool>());
}
