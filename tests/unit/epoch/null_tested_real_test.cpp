// The shared real traces through the default (null-tested) detector (issue 23): found and right;
// resnet18 must stay confirmed;
// the run without a signature abstains; bad input still says why.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "epochcast/epoch/detect.hpp"
#include "eval/synthetic.hpp"
#include "eval/variants.hpp"

namespace epochcast {
namespace {

DetectOptions null_tested() {
  DetectOptions o;
  return o;
}

const std::string kDir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";

class NullTestedReal : public ::testing::TestWithParam<const char*> {};

// Every shared trace with a boundary signature that is not launch-bound is found within 3 %
// (issue 23's target): resnet18 confirmed, the 4-epoch vgg16, resnet50 and effnetb0 by the
// agreeing class (its search beats 75-90 % of the nulls; kRegionTypicalAlpha 0.25).
TEST_P(NullTestedReal, FoundWithinThreePercent) {
  const auto base = testing::load_real_base(kDir, GetParam());
  const auto seg = detect_epochs(base.with_host, null_tested());
  const double truth = base.truth.period_s;
  ASSERT_TRUE(seg.found) << seg.reason;
  EXPECT_GE(seg.confidence, 0.9) << seg.reason;
  EXPECT_LE(std::abs(seg.period_s - truth) / truth, 0.03) << seg.reason;
  EXPECT_LE(testing::median_boundary_error_s(base.truth.epochs, seg.epochs), 0.5) << seg.reason;
  EXPECT_NE(seg.reason.find("whole-region search"), std::string::npos) << seg.reason;
}

// Launch-bound lenet5: found within 3 % or abstained below 0.5 (never confidently wrong).
TEST(NullTestedReal, LaunchBoundAbstainsOrRight) {
  const auto base = testing::load_real_base(kDir, "lenet5_28_bs64_fp32");
  const auto seg = detect_epochs(base.with_host, null_tested());
  const double truth = base.truth.period_s;
  if (seg.found) EXPECT_LE(std::abs(seg.period_s - truth) / truth, 0.03) << seg.reason;
  else EXPECT_LT(seg.confidence, 0.5) << seg.reason;
}

INSTANTIATE_TEST_SUITE_P(H200, NullTestedReal,
                         ::testing::Values("resnet18_32_bs128_cpuloader", "resnet50_224_bs256_bf16",
                                           "vgg16_224_bs32_fp32", "effnetb0_224_bs64_ckpt_500ms"));

TEST(NullTestedReal, Resnet18FoundAndConfirmed) {
  const auto base = testing::load_real_base(kDir, "resnet18_32_bs128_cpuloader");
  const auto seg = detect_epochs(base.with_host, null_tested());
  ASSERT_TRUE(seg.found) << seg.reason;
  EXPECT_LE(std::abs(seg.period_s - base.truth.period_s) / base.truth.period_s, 0.03);
  EXPECT_GE(seg.confidence, 0.9);
  EXPECT_NE(seg.reason.find("confirmed by the whole-region search"), std::string::npos) << seg.reason;
}

TEST(NullTestedReal, NoSignatureRunAbstains) {
  const auto base = testing::load_real_base(kDir, "mobilenetv2_224_bs128_noval");
  for (const Trace* t : {&base.with_host, &base.gpu_only}) {
    const auto seg = detect_epochs(*t, null_tested());
    EXPECT_FALSE(seg.found) << seg.reason;
    EXPECT_LT(seg.confidence, 0.5);
  }
}

// Every variant of every shared trace: no find more than 3 % off, except the one view known to
// be wrong (docs/detection.md): mobilenetv2 cropped at both ends, found at 4.90 s at 0.85.
TEST(NullTestedReal, VariantsNoWrongPeriodButTheKnownOne) {
  std::size_t runs = 0, wrong = 0;
  for (const auto& spec : testing::real_variants())
    for (const char* name : testing::kRealTraceNames) {
      const auto base = testing::load_real_base(kDir, name);
      const auto v = spec.build(base, 1, kDir + base.name + ".host.csv");
      const auto seg = detect_epochs(v.trace, null_tested());
      const auto o = testing::score_variant(base, v, seg);
      ++runs;
      const bool sig = base.truth.validation;
      if (!seg.found) continue;
      if (spec.name == "head 0.5 + tail cut" && base.name == "mobilenetv2_224_bs128_noval") {
        ++wrong;
        continue;
      }
      EXPECT_TRUE(sig) << spec.name << " / " << name << ": " << seg.reason;
      EXPECT_FALSE(o.wrong()) << spec.name << " / " << name << ": " << seg.reason;
    }
  EXPECT_GE(runs, 150u);
  EXPECT_LE(wrong, 1u);
}

TEST(NullTestedBadInput, TwoEpochsAndConstantSayWhy) {
  SyntheticSpec spec;
  spec.epochs = 2;
  spec.event_depth = 0.6;
  spec.event_duty = 0.1;
  const auto s = make_synthetic_trace(spec, 4);
  const auto seg = detect_epochs(s.trace, null_tested());
  EXPECT_FALSE(seg.found);
  EXPECT_FALSE(seg.reason.empty());
  EXPECT_NEAR(seg.candidate_period_s, s.truth.period_s, 0.1 * s.truth.period_s) << seg.reason;
  Trace c = s.trace;
  for (auto& ch : c.channels)
    for (double& x : ch.values) x = 7;
  const auto k = detect_epochs(c, null_tested());
  EXPECT_FALSE(k.found);
  EXPECT_NE(k.reason.find("constant"), std::string::npos) << k.reason;
}

}  // namespace
}  // namespace epochcast
