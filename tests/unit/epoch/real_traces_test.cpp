// The detector on the six real H200 traces against their truth.json (targets of issue 3).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "epochcast/epoch/detect.hpp"
#include "epochcast/trace/read.hpp"
#include "eval/truth.hpp"

namespace epochcast {
namespace {

const std::string kDir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";

struct Loaded {
  Trace trace;
  testing::RealTruth truth;
};

Loaded load(const std::string& name, bool with_host = true) {
  ReadOptions options;
  if (with_host) options.host_path = kDir + name + ".host.csv";
  Loaded l{read_trace(kDir + name + ".smi.csv", options), {}};
  l.truth = testing::load_truth(kDir + name + ".truth.json", l.trace.first_timestamp);
  return l;
}

void report(const char* name, bool host, const Segmentation& seg, const testing::RealTruth& truth) {
  const double err = seg.found ? std::abs(seg.period_s - truth.period_s) / truth.period_s : NAN;
  std::printf("%-30s host=%d found=%d period=%.3f truth=%.3f err=%.2f%% conf=%.2f epochs=%zu | %s\n", name, host,
              seg.found, seg.period_s, truth.period_s, 100 * err, seg.confidence, seg.epochs.size(),
              seg.reason.c_str());
}

// Issue 3 targets, on the traces with the host CPU log that came with them.
class RealTraceTarget : public ::testing::TestWithParam<const char*> {};

TEST_P(RealTraceTarget, PeriodWithin3PercentAndBoundariesWithinHalfSecond) {
  const auto l = load(GetParam(), true);
  const auto seg = detect_epochs(l.trace);
  report(GetParam(), true, seg, l.truth);
  ASSERT_TRUE(seg.found) << seg.reason;
  EXPECT_LE(std::abs(seg.period_s - l.truth.period_s) / l.truth.period_s, 0.03);
  EXPECT_LE(testing::median_boundary_error_s(l.truth.epochs, seg.epochs), 0.5);
  EXPECT_GE(seg.epochs.size(), l.truth.epochs.size() - 1);
  EXPECT_FALSE(seg.channels.empty());
  EXPECT_EQ(seg.first_timestamp, l.trace.first_timestamp);
}

INSTANTIATE_TEST_SUITE_P(H200, RealTraceTarget,
                         ::testing::Values("resnet18_32_bs128_cpuloader", "resnet50_224_bs256_bf16",
                                           "vgg16_224_bs32_fp32", "effnetb0_224_bs64_ckpt_500ms"));

// The 500 ms trace (~10 samples per epoch, one boundary seen only in power, a mid-epoch dip as
// deep as the boundaries) is found by its boundary events, with and without the host log.
TEST(RealTraceEvents, EffnetFoundByBoundaryEventsWithoutHostLog) {
  const auto l = load("effnetb0_224_bs64_ckpt_500ms", false);
  const auto seg = detect_epochs(l.trace);
  report("effnetb0 (no host)", false, seg, l.truth);
  ASSERT_TRUE(seg.found) << seg.reason;
  EXPECT_LE(std::abs(seg.period_s - l.truth.period_s) / l.truth.period_s, 0.03);
  EXPECT_LE(testing::median_boundary_error_s(l.truth.epochs, seg.epochs), 0.5);
  EXPECT_NE(seg.reason.find("boundary events"), std::string::npos) << seg.reason;
}

// Where the target is not met yet (docs/detection.md): a launch-bound 15 % utilisation run
// (lenet). What must hold: never a confident wrong answer — abstain, or be right.
// The same holds for every trace without the host log.
class RealTraceHonest : public ::testing::TestWithParam<const char*> {};

TEST_P(RealTraceHonest, AbstainsOrIsRight) {
  for (bool host : {true, false}) {
    const auto l = load(GetParam(), host);
    const auto seg = detect_epochs(l.trace);
    report(GetParam(), host, seg, l.truth);
    if (seg.found) {
      EXPECT_LE(std::abs(seg.period_s - l.truth.period_s) / l.truth.period_s, 0.03);
    } else {
      EXPECT_FALSE(seg.reason.empty());
      EXPECT_EQ(seg.period_s, 0.0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(H200, RealTraceHonest,
                         ::testing::Values("effnetb0_224_bs64_ckpt_500ms", "lenet5_28_bs64_fp32",
                                           "resnet18_32_bs128_cpuloader", "resnet50_224_bs256_bf16",
                                           "vgg16_224_bs32_fp32", "mobilenetv2_224_bs128_noval"));

// lenet5 (launch-bound, 5 epochs): the edge-anchored chain puts 3 of its 4 inner boundaries on
// steps seen in utilisation and power together, but 3 random steps line up that well with
// p ~ 2 %: not confirmed (0.5 needs p <= 1 %). Its best guess comes from that chain.
TEST(RealTraceLaunchBound, LenetBestGuessFromTheEdgeChain) {
  for (bool host : {true, false}) {
    const auto l = load("lenet5_28_bs64_fp32", host);
    const auto seg = detect_epochs(l.trace);
    report("lenet5 best guess", host, seg, l.truth);
    EXPECT_FALSE(seg.found) << seg.reason;
    EXPECT_LT(seg.confidence, 0.5);
    EXPECT_LE(std::abs(seg.candidate_period_s - l.truth.period_s) / l.truth.period_s, 0.03) << seg.reason;
    EXPECT_NE(seg.reason.find("arises by chance"), std::string::npos) << seg.reason;
  }
}

// resnet50 replayed, collected, scraped by Prometheus and read back (tests/data/prometheus):
// a clock toggling 1980 <-> 1965 MHz outvoted the epoch channels until two-level channels were
// left out on a second look.
TEST(RealTraceResampled, TwoLevelClockDoesNotOutvoteTheEpochs) {
  const double original = detect_epochs(load("resnet50_224_bs256_bf16").trace).period_s;
  ASSERT_GT(original, 0);
  const std::string dir = std::string(EPOCHCAST_TEST_DATA) + "/prometheus/";
  for (const auto& [file, speed] : {std::pair{"resnet50_replay1x_scraped.csv", 1.0},
                                    std::pair{"resnet50_replay1.5x_scraped.csv", 1.5}}) {
    const auto seg = detect_epochs(read_trace(dir + file));
    std::printf("%s found=%d period=%.3f expected=%.3f conf=%.2f | %s\n", file, seg.found, seg.period_s,
                original / speed, seg.confidence, seg.reason.c_str());
    ASSERT_TRUE(seg.found) << file << ": " << seg.reason;
    EXPECT_NEAR(seg.period_s * speed, original, 0.03 * original) << file;
    EXPECT_NE(seg.reason.find("sm_clock_mhz left out"), std::string::npos) << seg.reason;
  }
}

TEST(RealTraceNoSignature, AbstainsOrIsRight) {
  for (bool host : {true, false}) {
    const auto l = load("mobilenetv2_224_bs128_noval", host);
    const auto seg = detect_epochs(l.trace);
    std::printf("mobilenetv2 noval host=%d found=%d period=%.3f truth=%.3f conf=%.2f | %s\n", host,
                seg.found, seg.period_s, l.truth.period_s, seg.confidence, seg.reason.c_str());
    if (seg.found) {
      EXPECT_LE(std::abs(seg.period_s - l.truth.period_s) / l.truth.period_s, 0.03);
    } else {
      EXPECT_FALSE(seg.reason.empty());
      EXPECT_EQ(seg.period_s, 0.0);
    }
  }
}

}  // namespace
}  // namespace epochcast
