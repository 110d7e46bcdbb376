// The detector on the six real H200 traces against their truth.json (targets of issue 3).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "epochcast/epoch/detect.hpp"
#include "epochcast/trace/read.hpp"
#include "truth.hpp"

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

class RealTrace : public ::testing::TestWithParam<const char*> {};

TEST_P(RealTrace, PeriodWithin3PercentAndBoundariesWithinHalfSecond) {
  for (bool host : {true, false}) {
    const auto l = load(GetParam(), host);
    const auto seg = detect_epochs(l.trace);
    const double err = std::abs(seg.period_s - l.truth.period_s) / l.truth.period_s;
    const double berr = testing::median_boundary_error_s(l.truth.epochs, seg.epochs);
    std::printf("%-32s host=%d found=%d period=%.3f truth=%.3f err=%.2f%% conf=%.2f boundary_med=%.2fs epochs=%zu | %s\n",
                GetParam(), host, seg.found, seg.period_s, l.truth.period_s, 100 * err, seg.confidence,
                berr, seg.epochs.size(), seg.reason.c_str());
    ASSERT_TRUE(seg.found) << seg.reason;
    EXPECT_LE(err, 0.03);
    EXPECT_LE(berr, 0.5);
  }
}

INSTANTIATE_TEST_SUITE_P(H200, RealTrace,
                         ::testing::Values("effnetb0_224_bs64_ckpt_500ms", "lenet5_28_bs64_fp32",
                                           "resnet18_32_bs128_cpuloader", "resnet50_224_bs256_bf16",
                                           "vgg16_224_bs32_fp32"));

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
