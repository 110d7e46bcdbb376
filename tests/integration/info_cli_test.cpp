// `epochcast info` through the built CLI: every real H200 trace reads; bad files exit non-zero
// with one located message (a JSON error object under --json).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.hpp"

namespace {

using CliRun = epochcast::testing::CommandResult;
CliRun run(const std::string& args) { return epochcast::testing::run_cli(args + " 2>&1"); }

const std::string kData = EPOCHCAST_TEST_DATA;

TEST(InfoCli, ReadsEveryRealH200TraceWithHostMerged) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(kData + "/h200")) {
    const std::string p = e.path().string();
    if (p.size() < 8 || p.substr(p.size() - 8) != ".smi.csv") continue;
    const std::string host = p.substr(0, p.size() - 8) + ".host.csv";
    const CliRun r = run("info " + p + " --host " + host + " --json");
    ASSERT_EQ(r.status, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["format"], "nvidia-smi");
    EXPECT_EQ(j["gpu"]["name"], "NVIDIA H200");
    EXPECT_GT(j["samples"].get<int>(), 50);
    EXPECT_EQ(j["rows_skipped"], 0);
    EXPECT_EQ(j["channels"].size(), 14u);  // 12 GPU channels + host CPU and memory
    const double median = j["median_interval_s"];
    EXPECT_TRUE(std::abs(median - 0.1) < 0.01 || std::abs(median - 0.5) < 0.01) << p;
    ++n;
  }
  EXPECT_EQ(n, 6);
}

TEST(InfoCli, TableNamesFormatGpuAndChannels) {
  const CliRun r = run("info " + kData + "/h200/lenet5_28_bs64_fp32.smi.csv");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("format       nvidia-smi"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NVIDIA H200"), std::string::npos);
  EXPECT_NE(r.out.find("gpu_util_pct"), std::string::npos);
  EXPECT_NE(r.out.find("samples      245"), std::string::npos) << r.out;
}

TEST(InfoCli, BadFileExitsWithParseStatusAndLocatedMessage) {
  const CliRun r = run("info " + kData + "/bad/text_in_number.smi.csv");
  EXPECT_EQ(r.status, 4);
  EXPECT_NE(r.out.find("text_in_number.smi.csv:6:61: field 'power.draw [W]': not a number"), std::string::npos)
      << r.out;
  const CliRun j = run("info " + kData + "/bad/binary_garbage.bin --json");
  EXPECT_EQ(j.status, 4);
  const auto err = nlohmann::json::parse(j.out);
  EXPECT_EQ(err["error"]["code"], "parse");
  const CliRun lenient = run("info " + kData + "/bad/text_in_number.smi.csv --lenient --json");
  EXPECT_EQ(lenient.status, 0) << lenient.out;
  EXPECT_EQ(nlohmann::json::parse(lenient.out)["rows_skipped"], 1);
}

TEST(InfoCli, DcgmiLogAndGpuSelection) {
  const CliRun r = run("info " + kData + "/dcgmi/two_gpus_100ms.dmon.log --gpu 0 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["format"], "dcgmi");
  EXPECT_EQ(j["gpu"]["index"], 0);
  EXPECT_EQ(j["gpus_in_source"].size(), 2u);
  const CliRun missing = run("info " + kData + "/dcgmi/two_gpus_100ms.dmon.log --gpu 5");
  EXPECT_EQ(missing.status, 6) << missing.out;
}

}  // namespace
