#include "epochcast/collect/sampler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
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
  std::vector<double> unix_s;
  std::vector<double> lateness_s;
  std::vector<std::vector<GpuSample>> samples;
  std::vector<std::string> messages;
};

// `slow_tick(sequence)`: how long the consumer dawdles on that tick (a slow disk, a stall).
Recorded run(Sampler& sampler, std::function<std::chrono::milliseconds(std::uint64_t)> slow_tick = {}) {
  Recorded r;
  SamplerHooks hooks;
  hooks.on_tick = [&](const Tick& t) {
    r.sequence.push_back(t.sequence);
    r.elapsed_s.push_back(t.elapsed_s);
    r.unix_s.push_back(t.unix_s);
    r.lateness_s.push_back(t.lateness_s);
    r.samples.emplace_back(t.gpus.begin(), t.gpus.end());
    if (slow_tick) std::this_thread::sleep_for(slow_tick(t.sequence));
  };
  hooks.on_message = [&](const std::string& m) { r.messages.push_back(m); };
  sampler.run(hooks);
  return r;
}

// Every deadline 0..expected-1 sampled exactly once, except the recorded gaps: the sequence
// rises by one, and where it jumps the jump is a gap of exactly that many ticks.
void expect_complete_sequence(const Recorded& r, const SamplerStats& stats, std::uint64_t expected) {
  ASSERT_EQ(r.sequence.size(), stats.ticks);
  ASSERT_FALSE(r.sequence.empty());
  EXPECT_EQ(r.sequence.front(), 0u);
  std::size_t gap = 0;
  std::uint64_t skipped = 0;
  for (std::size_t i = 1; i < r.sequence.size(); ++i) {
    const std::uint64_t step = r.sequence[i] - r.sequence[i - 1];
    if (step == 1) continue;
    ASSERT_GT(r.sequence[i], r.sequence[i - 1]) << "tick " << i << " went back or repeated";
    ASSERT_LT(gap, stats.gaps.size()) << "unrecorded hole before sequence " << r.sequence[i];
    EXPECT_EQ(stats.gaps[gap].first_sequence, r.sequence[i - 1] + 1);
    EXPECT_EQ(stats.gaps[gap].ticks, step - 1);
    skipped += step - 1;
    ++gap;
  }
  EXPECT_EQ(gap, stats.gaps.size());
  EXPECT_EQ(skipped, stats.missed_ticks);
  EXPECT_EQ(stats.ticks + stats.missed_ticks, expected);
  EXPECT_EQ(stats.lateness.count(), stats.ticks);
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
  expect_complete_sequence(r, stats, 100);  // 1 s at 10 ms: deadlines 0..99
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

// An impossible NVML answer (utilisation 250 %) is left empty, said once per GPU and metric
// with the value, and counted, as the trace readers treat it (until 2026-12-01 written as given).
TEST(Sampler, ImpossibleReadingIsLeftEmptySaidOnceAndCounted) {
  FakeNvmlEnv env({{"EPOCHCAST_FAKE_NVML_VALUE", "gpu_util_pct=250"}});
  Nvml nvml;
  Sampler sampler(nvml, {.interval = std::chrono::milliseconds(5), .duration_s = 0.1});
  const Recorded r = run(sampler);
  ASSERT_FALSE(r.samples.empty());
  for (const auto& tick : r.samples) {
    EXPECT_TRUE(std::isnan(at(tick[0].values, Metric::kGpuUtil)));
    EXPECT_FALSE(std::isnan(at(tick[0].values, Metric::kPower)));  // the rest of the tick stays
  }
  EXPECT_EQ(sampler.stats().impossible_values, r.samples.size());
  const auto said = std::count_if(r.messages.begin(), r.messages.end(), [](const std::string& m) {
    return m.find("GPU 0: impossible gpu_util_pct reading 250 (outside 0 to 100 %) at tick 0; cell left empty") !=
           std::string::npos;
  });
  EXPECT_EQ(said, 1);
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

TEST(Sampler, SlowDriverCallsAreSampledLateNeverSkippedOrDoubled) {
  // 11 calls per tick at 3 ms each take ~33 ms: a 10 ms schedule falls further behind every
  // tick, yet each deadline gets its one read, late, with its lateness counted.
  FakeNvmlEnv env({{"EPOCHCAST_FAKE_NVML_SLOW_MS", "3"}});
  Nvml nvml;
  Sampler sampler(nvml, {.interval = std::chrono::milliseconds(10), .duration_s = 0.3,
                         .max_behind = std::chrono::milliseconds(10'000)});
  const Recorded r = run(sampler);
  const SamplerStats& stats = sampler.stats();
  expect_complete_sequence(r, stats, 30);
  EXPECT_EQ(stats.missed_ticks, 0u);
  EXPECT_GE(stats.late_ticks, 20u);
  EXPECT_GE(stats.lateness.max_s(), 0.3) << "29 ticks of 33 ms against 10 ms deadlines";
  EXPECT_NEAR(stats.lateness.max_s(), *std::max_element(r.lateness_s.begin(), r.lateness_s.end()), 1e-9);
  for (std::size_t i = 1; i < r.unix_s.size(); ++i) EXPECT_GT(r.unix_s[i], r.unix_s[i - 1]);
}

TEST(Sampler, LateTicksAreCaughtUpOneReadEachWithDistinctTimes) {
  // The consumer stalls 45 ms on tick 10: deadlines 11..14 pass meanwhile. They are read
  // afterwards, in order, at least interval/4 apart (distinct millisecond timestamps).
  FakeNvmlEnv env({});
  Nvml nvml;
  Sampler sampler(nvml, {.interval = std::chrono::milliseconds(10), .duration_s = 0.6});
  const Recorded r = run(sampler, [](std::uint64_t seq) { return std::chrono::milliseconds(seq == 10 ? 45 : 0); });
  const SamplerStats& stats = sampler.stats();
  expect_complete_sequence(r, stats, 60);
  EXPECT_TRUE(stats.gaps.empty());
  EXPECT_GE(stats.late_ticks, 3u);
  EXPECT_GE(stats.lateness.max_s(), 0.030);
  ASSERT_GT(r.lateness_s.size(), 11u);
  EXPECT_GE(r.lateness_s[11], 0.030) << "tick 11 was due during the stall";
  for (std::size_t i = 1; i < r.unix_s.size(); ++i)
    EXPECT_GE(r.unix_s[i] - r.unix_s[i - 1], 0.002) << "ticks " << r.sequence[i - 1] << " and " << r.sequence[i];
  EXPECT_NE(describe_schedule(stats).find("60 ticks, 0 missed (0 gaps)"), std::string::npos)
      << describe_schedule(stats);
}

TEST(Sampler, LongStallIsOneRecordedGapNotABurst) {
  // 1.3 s stuck on tick 5 (a SIGSTOP, a suspended laptop): beyond max_behind (1 s) the ~130
  // deadlines in between are one gap, said once, and sampling goes on from the latest one.
  FakeNvmlEnv env({});
  Nvml nvml;
  Sampler sampler(nvml, {.interval = std::chrono::milliseconds(10), .duration_s = 2.0});
  const Recorded r = run(sampler, [](std::uint64_t seq) { return std::chrono::milliseconds(seq == 5 ? 1300 : 0); });
  const SamplerStats& stats = sampler.stats();
  expect_complete_sequence(r, stats, 200);
  ASSERT_GE(stats.gaps.size(), 1u);
  const SamplerGap& gap = stats.gaps.front();
  EXPECT_EQ(gap.first_sequence, 6u);
  EXPECT_GE(gap.ticks, 100u);
  EXPECT_LE(gap.ticks, 200u);
  EXPECT_GE(gap.behind_s, 1.0);
  const auto gap_lines = std::count_if(r.messages.begin(), r.messages.end(),
                                       [](const std::string& m) { return m.starts_with("gap: "); });
  EXPECT_EQ(gap_lines, static_cast<long>(stats.gaps.size()));
  // The tick after the gap is the latest due deadline: read less than an interval late.
  const auto after = std::find(r.sequence.begin(), r.sequence.end(), gap.first_sequence + gap.ticks);
  ASSERT_NE(after, r.sequence.end());
  EXPECT_LT(r.lateness_s[static_cast<std::size_t>(after - r.sequence.begin())], 0.010 + 0.005);
}

TEST(Sampler, GpuListedTwiceIsRefused) {
  FakeNvmlEnv env({{"EPOCHCAST_FAKE_NVML_GPUS", "2"}});
  Nvml nvml;
  try {
    Sampler twice(nvml, {.gpus = {0, 1, 0}});
    FAIL() << "GPU 0 twice would write every row twice";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("GPU 0 is selected twice"), std::string::npos) << e.what();
  }
}

TEST(ParseGpuList, AllSingleListAndErrors) {
  EXPECT_TRUE(collect::parse_gpu_list("all").empty());
  EXPECT_EQ(collect::parse_gpu_list("3"), (std::vector<unsigned>{3}));
  EXPECT_EQ(collect::parse_gpu_list("0,2,1"), (std::vector<unsigned>{0, 2, 1}));
  for (const char* bad : {"", "0,0", "1,2,1", "a", "1,", ",1", "-1", "1.5", "0 ,1", "99999999999"}) {
    try {
      (void)collect::parse_gpu_list(bad);
      ADD_FAILURE() << "'" << bad << "' accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << bad;
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
  try {
    (void)collect::parse_gpu_list("0,0");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GPU 0 is listed twice"), std::string::npos) << e.what();
  }
}

TEST(LatenessHistogram, QuantilesWithinTheBucketPrecision) {
  LatenessHistogram h;
  EXPECT_EQ(h.quantile(0.5), 0.0);
  EXPECT_EQ(h.max_s(), 0.0);
  for (int us = 1; us <= 10000; ++us) h.add(us * 1e-6);  // 1 µs .. 10 ms, uniform
  EXPECT_EQ(h.count(), 10000u);
  EXPECT_NEAR(h.quantile(0.5), 5000e-6, 0.02 * 5000e-6);
  EXPECT_NEAR(h.quantile(0.99), 9900e-6, 0.02 * 9900e-6);
  EXPECT_DOUBLE_EQ(h.max_s(), 0.01);
  EXPECT_DOUBLE_EQ(h.quantile(1.0), 0.01);
  EXPECT_NEAR(h.mean_s(), 5000.5e-6, 1e-9);
  h.add(-1);          // read a hair before the deadline: on time
  h.add(86400 * 90);  // beyond the last octave: capped, still counted, max exact
  EXPECT_EQ(h.count(), 10002u);
  EXPECT_EQ(h.max_s(), 86400.0 * 90);
  EXPECT_NEAR(h.quantile(0.5), 5000e-6, 0.02 * 5000e-6);
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
