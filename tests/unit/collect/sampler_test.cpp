#include "epochcast/collect/sampler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <thread>

#include "epochcast/core/error.hpp"
#include "epochcast/trace/read.hpp"
#include "fake_env.hpp"

namespace epochcast {
namespace {

using testing::FakeNvmlEnv;
using testing::h200_trace;

double at(const MetricValues& v, Metric m) { return v[static_cast<std::size_t>(m)]; }

struct Recorded {
  std::vector<std::uint64_t> sequence;
  std::vector<double> elapsed_s;
  std::vector<std::vector<GpuSample>> samples;
  std::vector<std::string> messages;
};

Recorded run(Sampler& sampler) {
  Recorded r;
  SamplerHooks hooks;
  hooks.on_tick = [&](const Tick& t) {
    r.sequence.push_back(t.sequence);
    r.elapsed_s.push_back(t.elapsed_s);
    r.samples.emplace_back(t.gpus.begin(), t.gpus.end());
  };
  hooks.on_message = [&](const std::string& m) { r.messages.push_back(m); };
  sampler.run(hooks);
  return r;
}

TEST(Sampler, SamplesEveryDeadlineOnceAndFollowsTheReplay) {
  constexpr double kSpeed = 10;
  FakeNvmlEnv env({{"EPOCHCAST_FAKE_NVML_SPEED", "10"}});
  const Trace trace = read_trace(h200_trace());
  Nvml nvml;
  Sampler sampler(nvml, {.interval = std::chrono::milliseconds(10), .duration_s = 1.0});
  ASSERT_EQ(sampler.gpus().size(), 1u);
  const auto& columns = sampler.columns();
  EXPECT_NE(std::find(columns.begin(), columns.end(), Metric::kGpuUtil), columns.end());
  EXPECT_NE(std::find(columns.begin(), columns.end(), Metric::kPower), columns.end());
  // Energy is integrated by the fake from power; PCIe throughput was not asked for.
  EXPECT_NE(std::find(columns.begin(), columns.end(), Metric::kEnergy), columns.end());
  EXPECT_EQ(std::find(columns.begin(), columns.end(), Metric::kPcieTx), columns.end());

  const Recorded r = run(sampler);
  const SamplerStats& stats = sampler.stats();
  EXPECT_EQ(stats.ticks + stats.missed_ticks, 100u);  // 1 s at 10 ms: deadlines 0..99
  ASSERT_EQ(r.sequence.size(), stats.ticks);
  for (std::size_t i = 1; i < r.sequence.size(); ++i) EXPECT_GT(r.sequence[i], r.sequence[i - 1]);
  EXPECT_EQ(r.sequence.back() + 1, 100u);
  // Each sample's power is one the trace had around that instant of the replay.
  const auto& t = trace.time_s;
  const auto& power = trace.find(Metric::kPower)->values;
  for (std::size_t i = 0; i < r.samples.size(); i += 10) {
    const double replay_s = r.elapsed_s[i] * kSpeed;
    const auto k = static_cast<std::size_t>(std::upper_bound(t.begin(), t.end(), replay_s) - t.begin());
    std::set<double> nearby;
    for (std::size_t j = k >= 3 ? k - 3 : 0; j < std::min(k + 3, t.size()); ++j) nearby.insert(power[j]);
    const double got = at(r.samples[i][0].values, Metric::kPower);
    EXPECT_TRUE(std::any_of(nearby.begin(), nearby.end(), [&](double p) { return std::abs(p - got) < 0.002; }))
        << "tick " << i << " at replay " << replay_s << " s: power " << got;
  }
}

TEST(Sampler, UnsupportedMetricIsAbsentAndSaidOnce) {
  FakeNvmlEnv env({{"EPOCHCAST_FAKE_NVML_NOT_SUPPORTED", "power_w,temperature_c"}});
  Nvml nvml;
  Sampler sampler(nvml, {.interval = std::chrono::milliseconds(5), .duration_s = 0.1});
  const auto& columns = sampler.columns();
  EXPECT_EQ(std::find(columns.begin(), columns.end(), Metric::kPower), columns.end());
  EXPECT_EQ(std::find(columns.begin(), columns.end(), Metric::kTemperature), columns.end());
  const Recorded r = run(sampler);
  const auto power_lines = std::count_if(r.messages.begin(), r.messages.end(), [](const std::string& m) {
    return m.find("nvmlDeviceGetPowerUsage not supported") != std::string::npos;
  });
  EXPECT_EQ(power_lines, 1);
  EXPECT_EQ(sampler.stats().failed_reads, 0u);
  for (const auto& tick : r.samples) EXPECT_TRUE(std::isnan(at(tick[0].values, Metric::kPower)));
}

TEST(Sampler, GpuLostMidRunEndsTheRunWithTheErrorRecorded) {
  FakeNvmlEnv env({{"EPOCHCAST_FAKE_NVML_LOST_AFTER_S", "0.3"}});
  Nvml nvml;
  Sampler sampler(nvml, {.interval = std::chrono::milliseconds(10), .duration_s = 5.0});
  const auto started = std::chrono::steady_clock::now();
  const Recorded r = run(sampler);
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_LT(took_s, 2.0) << "the run must end when every GPU is lost, not at the duration";
  EXPECT_GE(r.samples.size(), 20u);  // the samples before the loss were delivered
  ASSERT_EQ(sampler.stats().errors.size(), 1u);
  EXPECT_NE(sampler.stats().errors[0].find("lost"), std::string::npos) << sampler.stats().errors[0];
  EXPECT_TRUE(std::any_of(r.messages.begin(), r.messages.end(),
                          [](const std::string& m) { return m.starts_with("error: GPU 0"); }));
}

TEST(Sampler, OneLostGpuOfTwoLeavesTheOtherSampled) {
  FakeNvmlEnv env({{"EPOCHCAST_FAKE_NVML_GPUS", "2"},
                   {"EPOCHCAST_FAKE_NVML_LOST_AFTER_S", "0.2"},
                   {"EPOCHCAST_FAKE_NVML_LOST_GPU", "1"}});
  Nvml nvml;
  Sampler sampler(nvml, {.interval = std::chrono::milliseconds(10), .duration_s = 0.5});
  ASSERT_EQ(sampler.gpus().size(), 2u);
  EXPECT_NE(sampler.gpus()[0].uuid, sampler.gpus()[1].uuid);
  const Recorded r = run(sampler);
  EXPECT_EQ(r.samples.front().size(), 2u);
  EXPECT_EQ(r.samples.back().size(), 1u);
  EXPECT_EQ(r.samples.back()[0].slot, 0u);
  EXPECT_EQ(sampler.stats().errors.size(), 1u);
  EXPECT_EQ(r.sequence.back() + 1, sampler.stats().ticks + sampler.stats().missed_ticks);
}

TEST(Sampler, GpuSelectionAndUnknownIndex) {
  FakeNvmlEnv env({{"EPOCHCAST_FAKE_NVML_GPUS", "3"}});
  Nvml nvml;
  Sampler one(nvml, {.gpus = {2}});
  ASSERT_EQ(one.gpus().size(), 1u);
  EXPECT_EQ(one.gpus()[0].index, 2);
  try {
    Sampler bad(nvml, {.gpus = {5}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

TEST(Sampler, SlowCallsSkipDeadlinesInsteadOfSamplingTwice) {
  // 11 calls per tick at 3 ms each take ~33 ms: a 10 ms schedule must skip deadlines.
  FakeNvmlEnv env({{"EPOCHCAST_FAKE_NVML_SLOW_MS", "3"}});
  Nvml nvml;
  Sampler sampler(nvml, {.interval = std::chrono::milliseconds(10), .duration_s = 0.5});
  const Recorded r = run(sampler);
  const SamplerStats& stats = sampler.stats();
  EXPECT_GT(stats.missed_ticks, 0u);
  EXPECT_LT(stats.ticks, 50u);
  for (std::size_t i = 1; i < r.sequence.size(); ++i) EXPECT_GT(r.sequence[i], r.sequence[i - 1]);
  std::set<std::uint64_t> unique(r.sequence.begin(), r.sequence.end());
  EXPECT_EQ(unique.size(), r.sequence.size()) << "a deadline was sampled twice";
}

TEST(Sampler, PcieThroughputComesFromItsOwnThread) {
  FakeNvmlEnv env({{"EPOCHCAST_FAKE_NVML_PCIE_KBPS", "1000"}, {"EPOCHCAST_FAKE_NVML_PCIE_MS", "20"}});
  Nvml nvml;
  Sampler sampler(nvml, {.interval = std::chrono::milliseconds(10), .duration_s = 0.5, .pcie = true});
  const auto& columns = sampler.columns();
  EXPECT_NE(std::find(columns.begin(), columns.end(), Metric::kPcieTx), columns.end());
  const Recorded r = run(sampler);
  // TX+RX block 40 ms per round, yet ticks keep their 10 ms pace.
  EXPECT_EQ(sampler.stats().missed_ticks, 0u);
  EXPECT_GE(sampler.stats().pcie_polls, 5u);
  EXPECT_DOUBLE_EQ(at(r.samples.back()[0].values, Metric::kPcieTx), 1000 * 1024.0);
  EXPECT_DOUBLE_EQ(at(r.samples.back()[0].values, Metric::kPcieRx), 1000 * 1024.0);
}

TEST(Sampler, HostMetricsFromProc) {
  FakeNvmlEnv env({});
  Nvml nvml;
  Sampler sampler(nvml, {.interval = std::chrono::milliseconds(20), .duration_s = 0.3, .host = true});
  const auto& columns = sampler.columns();
  EXPECT_NE(std::find(columns.begin(), columns.end(), Metric::kHostCpuUtil), columns.end());
  const Recorded r = run(sampler);
  const double mem = at(r.samples.back()[0].values, Metric::kHostMemUsed);
  EXPECT_GT(mem, 1.0);
  const double cpu = at(r.samples.back()[0].values, Metric::kHostCpuUtil);
  if (!std::isnan(cpu)) {
    EXPECT_GE(cpu, 0.0);
    EXPECT_LE(cpu, 100.0);
  }
}

TEST(Sampler, StopEndsTheRunFromAnotherThread) {
  FakeNvmlEnv env({});
  Nvml nvml;
  Sampler sampler(nvml, {.interval = std::chrono::milliseconds(10)});
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    sampler.stop();
  });
  const Recorded r = run(sampler);
  stopper.join();
  EXPECT_GE(r.samples.size(), 5u);
  EXPECT_LE(r.samples.size(), 40u);
}

TEST(Sampler, ZeroIntervalIsRefused) {
  FakeNvmlEnv env({});
  Nvml nvml;
  EXPECT_THROW(Sampler(nvml, {.interval = std::chrono::milliseconds(0)}), Error);
}

}  // namespace
}  // namespace epochcast
