// Semi-real long runs (issue 23, "Long runs"; src/eval/chained.hpp): the chain is what it
// claims to be, and the detector finds its period, live and after the fact, on a few of them
// (the full grid is `detect_bench --eval-long`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>

#include "epochcast/epoch/detect.hpp"
#include "eval/chained.hpp"
#include "eval/follow_replay.hpp"
#include "eval/variants.hpp"

namespace epochcast {
namespace {

const std::string kDir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";

TEST(ChainedRuns, TheChainIsTheRealStartUpEpochsAndTail) {
  const auto base = testing::load_real_base(kDir, "vgg16_224_bs32_fp32");
  const auto run = eval::chain_real_epochs(base, {40, 0.05}, 3);
  ASSERT_EQ(run.epochs.size(), 40u);
  const double dt = base.with_host.median_interval_s();
  // The start-up is the original's, sample for sample, up to the first epoch.
  const auto& orig = base.with_host.find(Metric::kGpuUtil)->values;
  const auto& got = run.trace.find(Metric::kGpuUtil)->values;
  const auto& ot = base.with_host.time_s;
  const auto head = static_cast<std::size_t>(std::lower_bound(ot.begin(), ot.end(), base.train_begin_s) - ot.begin());
  EXPECT_DOUBLE_EQ(run.epochs.front().start_s, static_cast<double>(head) * dt);  // on the chain's regular axis
  for (std::size_t i = 0; i < head; ++i) EXPECT_EQ(got[i], orig[i]) << i;
  // Epochs tile the chain; lengths vary around the source epochs' by about the asked 5 %.
  double sum = 0, sq = 0;
  for (std::size_t k = 0; k < run.epochs.size(); ++k) {
    if (k) EXPECT_DOUBLE_EQ(run.epochs[k].start_s, run.epochs[k - 1].end_s);
    const double r = (run.epochs[k].end_s - run.epochs[k].start_s) / base.truth.period_s - 1;
    sum += r, sq += r * r;
  }
  const double sd = std::sqrt(sq / 40 - (sum / 40) * (sum / 40));
  EXPECT_GT(sd, 0.025);
  EXPECT_LT(sd, 0.08);
  EXPECT_NEAR(run.period_s, base.truth.period_s, 0.05 * base.truth.period_s);
  // The tail is the original's last samples; every value is one the original has.
  EXPECT_EQ(got.back(), orig.back());
  EXPECT_GT(run.trace.duration_s(), 40 * 0.9 * base.truth.period_s);
  EXPECT_EQ(run.trace.size(), run.trace.find(Metric::kPower)->values.size());
}

// Never a confident wrong answer on a chain, after the fact or live: found within 5 % or no
// period. (The targets -- >= 98 % found within 2 %, live by the 5th epoch on >= 90 % -- are
// measured by `detect_bench --eval-long`; today they are not met, docs/detection.md "Long runs".)
class ChainedDetect : public ::testing::TestWithParam<const char*> {};

TEST_P(ChainedDetect, RightOrAbstainAfterTheFactAndLive) {
  const auto base = testing::load_real_base(kDir, GetParam());
  for (int epochs : {10, 30}) {
    const auto run = eval::chain_real_epochs(base, {epochs, 0.05}, 21);
    const auto seg = detect_epochs(run.trace);
    if (seg.found) EXPECT_LE(std::abs(seg.period_s - run.period_s), 0.05 * run.period_s) << epochs << ": " << seg.reason;
    const auto f = eval::replay_follow(run.trace, run.epochs[4].end_s, 1.0);
    if (f.confident) EXPECT_LE(std::abs(f.period_s - run.period_s), 0.05 * run.period_s) << epochs << " live";
  }
}

INSTANTIATE_TEST_SUITE_P(H200, ChainedDetect,
                         ::testing::Values("resnet18_32_bs128_cpuloader", "resnet50_224_bs256_bf16",
                                           "vgg16_224_bs32_fp32", "effnetb0_224_bs64_ckpt_500ms",
                                           "lenet5_28_bs64_fp32"));

// resnet18 (CPU loader), the trace the search confirms alone, meets the long-run targets on a
// 30-epoch chain: found within 2 %, and live within 5 % by the end of the 5th epoch.
TEST(ChainedRuns, Resnet18FoundWithinTwoPercentAndLiveByTheFifthEpoch) {
  const auto base = testing::load_real_base(kDir, "resnet18_32_bs128_cpuloader");
  const auto run = eval::chain_real_epochs(base, {30, 0.05}, 21);
  const auto seg = detect_epochs(run.trace);
  ASSERT_TRUE(seg.found) << seg.reason;
  EXPECT_LE(std::abs(seg.period_s - run.period_s), 0.02 * run.period_s) << seg.reason;
  const auto f = eval::replay_follow(run.trace, run.epochs[4].end_s, 1.0);
  ASSERT_TRUE(f.confident) << "no confident answer by the 5th epoch (" << f.runs << " runs)";
  EXPECT_LE(std::abs(f.period_s - run.period_s), 0.05 * run.period_s);
}

// The run without a signature stays a null however long it is chained, after the fact and live
// (followed through its first 10 epochs).
TEST(ChainedRuns, NoSignatureChainAbstains) {
  const auto base = testing::load_real_base(kDir, "mobilenetv2_224_bs128_noval");
  for (int epochs : {10, 30}) {
    const auto run = eval::chain_real_epochs(base, {epochs, 0.05}, 5);
    const auto seg = detect_epochs(run.trace);
    EXPECT_FALSE(seg.found) << epochs << ": " << seg.reason;
    const auto f = eval::replay_follow(run.trace, run.epochs[std::min<std::size_t>(9, run.epochs.size() - 1)].end_s, 1.0);
    EXPECT_FALSE(f.confident) << epochs << ": live answer " << f.period_s << " s at " << f.at_s;
  }
}

// A chain of `name`'s epochs detected after the fact, with the checks every find of the
// search-alone tail class shares: found, at the class's 0.55, within 2 % of the chain's mean epoch.
Segmentation search_alone_find(const char* name, const eval::ChainSpec& spec, std::uint64_t seed) {
  const auto run = eval::chain_real_epochs(testing::load_real_base(kDir, name), spec, seed);
  Segmentation seg = detect_epochs(run.trace);
  EXPECT_TRUE(seg.found) << seg.reason;
  EXPECT_DOUBLE_EQ(seg.confidence, 0.55) << seg.reason;
  EXPECT_LE(std::abs(seg.period_s - run.period_s), 0.02 * run.period_s) << seg.reason;
  return seg;
}

// A 30-epoch resnet50 chain: the other proposers stay below their bar, the whole-region search
// alone beats both nulls' extreme-value tail (Gumbel p <= 0.001) and their candidate is its
// period: found within 2 % at the class's confidence 0.55 (arbitration.cpp kConfidenceAloneTail;
// detect_bench --eval-long: resnet50, 30 epochs, 5 %, seed 1).
TEST(ChainedRuns, SearchAloneBeyondTheTail) {
  const auto seg = search_alone_find("resnet50_224_bs256_bf16", {30, 0.05}, 7919ULL * 1 + 30);
  EXPECT_EQ(seg.reason.rfind("the whole-region search alone:", 0), 0u) << seg.reason;
  EXPECT_GE(seg.epochs.size(), 20u);
}

// A 100-epoch effnetb0 chain, epochs varying 2 %: its boundaries wander ~0.2 epochs off any even
// grid, which then beats neither null; the boundary chain follows them, beats both nulls' tail,
// and the others' candidate is its period (detect_bench --eval-long: effnetb0, 100, 2 %, seed 1;
// no period before the chain).
TEST(ChainedRuns, BoundaryChainFollowsAHundredWanderingEpochs) {
  const auto seg = search_alone_find("effnetb0_224_bs64_ckpt_500ms", {100, 0.02}, 7919ULL * 1 + 100);
  EXPECT_NE(seg.reason.find("(boundary chain)"), std::string::npos) << seg.reason;
  EXPECT_GE(seg.epochs.size(), 90u);
}

// A 30-epoch resnet50 chain: the other proposers find nothing, their best guess is 3 of the
// search's epochs, and the search beats both nulls' tail: the boundaries of their guess are
// among the search's, found within 2 % at 0.55 (detect_bench --eval-long: resnet50, 30 epochs,
// 10 %, seed 3). The rule on hand-made hypotheses: ArbitrationMultiple.*.
TEST(ChainedRuns, SearchAloneWhenTheOthersBestGuessIsAMultiple) {
  const auto seg = search_alone_find("resnet50_224_bs256_bf16", {30, 0.10}, 7919ULL * 3 + 30);
  EXPECT_EQ(seg.reason.rfind("the whole-region search alone:", 0), 0u) << seg.reason;
  EXPECT_NE(seg.reason.find("their best guess is 3 of its epochs"), std::string::npos) << seg.reason;
}

// 100-epoch chains whose even grid beats both nulls at 2 epochs (vgg16, 5 %, seed 1; effnetb0,
// 2 %, seed 3) while the ACF's guess, below its bar, is one: the boundary chain within 5 % of the
// guess beats its own nulls, its boundaries two at a time are alike, found within 2 % at 0.55
// (abstained before: the grid's 2 P alone at 0.45). Hand-made: ArbitrationMultiple.GridAtTwice….
TEST(ChainedRuns, ChainNearTheOthersGuessWhenTheGridLocksOntoTwoEpochs) {
  for (const auto& [name, spec, seed] :
       {std::tuple{"vgg16_224_bs32_fp32", eval::ChainSpec{100, 0.05}, 7919ULL * 1 + 100},
        std::tuple{"effnetb0_224_bs64_ckpt_500ms", eval::ChainSpec{100, 0.02}, 7919ULL * 3 + 100}}) {
    const auto seg = search_alone_find(name, spec, seed);
    EXPECT_NE(seg.reason.find("the even grid's best was 2 of these epochs"), std::string::npos) << name << ": " << seg.reason;
  }
}

// A real run warms up once: the chain opens with the source's first epoch (its warm-up) and
// closes with its last; the epochs between are the source's inner ones, never the first.
TEST(ChainedRuns, WarmUpEpochOnlyFirst) {
  const auto base = testing::load_real_base(kDir, "mobilenetv2_224_bs128_noval");
  const auto run = eval::chain_real_epochs(base, {30, 0.0}, 9);
  const auto& src = base.with_host.find(Metric::kPower)->values;
  const auto& got = run.trace.find(Metric::kPower)->values;
  const auto& ot = base.with_host.time_s;
  const auto row = [&](double t) {
    return static_cast<std::size_t>(std::lower_bound(ot.begin(), ot.end(), t) - ot.begin());
  };
  const double dt = base.with_host.median_interval_s();
  const auto first = row(base.truth.epochs.front().start_s), second = row(base.truth.epochs[1].start_s);
  // Epoch 0 of the chain is the source's epoch 0, sample for sample (no length variation here).
  const auto at = static_cast<std::size_t>(std::lround(run.epochs[0].start_s / dt));
  for (std::size_t i = 0; i < second - first; ++i) ASSERT_EQ(got[at + i], src[first + i]) << i;
  // No later chained epoch starts with the source's first epoch's first samples (the warm-up).
  for (std::size_t k = 1; k < run.epochs.size(); ++k) {
    const auto a = static_cast<std::size_t>(std::lround(run.epochs[k].start_s / dt));
    bool same = true;
    for (std::size_t i = 0; i < 5; ++i) same = same && got[a + i] == src[first + i];
    EXPECT_FALSE(same) << "epoch " << k;
  }
}

}  // namespace
}  // namespace epochcast
