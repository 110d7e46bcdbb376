// Launch-bound runs (the lenet5 situation, modelled physically): boundaries are one-refresh
// utilisation rises of a few reading steps on a ~14 % level with a small power step, and
// mid-epoch bumps of the same shape happen at random. The null twin has the bumps but no
// boundary signature: it must abstain.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "epochcast/epoch/detect.hpp"
#include "eval/synthetic.hpp"
#include "eval/truth.hpp"

namespace epochcast {
namespace {

SyntheticSpec physical(int epochs) {
  SyntheticSpec s;
  s.busy_util_pct = 14;
  s.event_depth = -0.4;  // +~5.6 util points for 0.18 s
  s.event_duty = 0.05;
  s.period_s = 3.6;
  s.epochs = epochs;
  s.period_jitter = 0.05;
  s.noise = 0.01;
  s.warmup_s = 0;
  s.idle_head_s = 4;
  s.idle_tail_s = 3;
  s.util_refresh_s = 0.2;
  s.power_w_per_util = 0.4;
  s.power_noise_w = 0.1;
  s.power_wander_w = 0.3;
  s.mem_util_scale = 0;
  s.iteration_amp = 0;
  s.bump_rate_per_s = 0.25;
  return s;
}

TEST(LaunchBound, GeneratorRepeatsUtilisationBetweenRefreshes) {
  const auto s = make_synthetic_trace(physical(5), 3);
  const auto& u = s.trace.find(Metric::kGpuUtil)->values;
  std::size_t repeats = 0;
  for (std::size_t i = 1; i < u.size(); ++i) repeats += u[i] == u[i - 1];
  // 0.2 s refresh at 0.1 s sampling: at least every other sample repeats its predecessor.
  EXPECT_GE(repeats, u.size() / 2);
  const auto null = [] {
    auto spec = physical(5);
    spec.boundary_signature = false;
    return spec;
  }();
  EXPECT_FALSE(make_synthetic_trace(null, 3).truth.has_signature);
  EXPECT_TRUE(s.truth.has_signature);
}

bool by_chain(const Segmentation& seg) { return seg.reason.find("busy region's edges") != std::string::npos; }

// With the signature: what the edge-anchored chain confirms is right (within 3 %, boundaries
// within 0.5 s), and with 8 or 12 epochs between the idle edges it confirms some.
TEST(LaunchBound, ChainFindsAreRight) {
  int chain = 0;
  for (int epochs : {8, 12}) {
    for (std::uint64_t seed = 0; seed < 25; ++seed) {
      const auto s = make_synthetic_trace(physical(epochs), seed * 7919 + 17);
      const auto seg = detect_epochs(s.trace);
      if (!seg.found || !by_chain(seg)) continue;
      ++chain;
      const double err = std::abs(seg.period_s - s.truth.period_s) / s.truth.period_s;
      EXPECT_LE(err, 0.03) << "epochs " << epochs << " seed " << seed << ": " << seg.reason;
      EXPECT_LE(testing::median_boundary_error_s(s.truth.epochs, seg.epochs), 0.5) << seg.reason;
      EXPECT_EQ(seg.epochs.size(), static_cast<std::size_t>(epochs)) << seg.reason;
      EXPECT_GE(seg.confidence, 0.5);
    }
  }
  std::printf("launch-bound physical, 8 and 12 epochs: %d of 50 confirmed by the chain\n", chain);
  EXPECT_GE(chain, 4);
}

// Without it (the same bumps, no boundary signature): the chain's confidence is a chance
// probability (0.5 at p = 1 %), so over 125 null runs it may confirm one at most. (Measured:
// 0 of these 125; 1 of 500 over seeds 0-99, at p = 0.010.)
TEST(LaunchBound, NullTwinRarelyConfirmedByTheChain) {
  int chain = 0;
  for (int epochs : {4, 5, 6, 8, 12}) {
    for (std::uint64_t seed = 0; seed < 25; ++seed) {
      auto spec = physical(epochs);
      spec.boundary_signature = false;
      const auto s = make_synthetic_trace(spec, seed * 7919 + 17);
      const auto seg = detect_epochs(s.trace);
      if (seg.found && by_chain(seg)) {
        ++chain;
        std::printf("null twin confirmed by the chain: epochs %d seed %llu: %s\n", epochs,
                    static_cast<unsigned long long>(seed), seg.reason.c_str());
      }
    }
  }
  EXPECT_LE(chain, 1);
}

// The autocorrelation path on few epochs: the template is folded from the same 3-4 epochs it
// is matched against, so "2/2" or "3/3 boundaries match" happens on random bumps too. An epoch
// counts towards the confidence only when matched boundaries (or an idle edge one period away)
// close it on both sides. This null twin was found at confidence 0.91 ("2/2 boundaries match
// (jitter 0.0 %), 2.8 epochs in view") before.
TEST(LaunchBound, NullTwinWithOneMatchedEpochAbstains) {
  auto spec = physical(6);
  spec.boundary_signature = false;
  const auto seg = detect_epochs(make_synthetic_trace(spec, 38 * 7919 + 17).trace);
  EXPECT_FALSE(seg.found) << seg.reason;
  EXPECT_LT(seg.confidence, 0.5) << seg.reason;
  EXPECT_NE(seg.reason.find("between matched boundaries"), std::string::npos) << seg.reason;
}

// Seeds 100-139 (not the bench's --null seeds 0-99): null finds over 200 runs and right finds
// on the signature twins. Measured: main before this rule 7 null finds, 34 right of 44 found;
// with it 4 null finds, 34 right of 43.
TEST(LaunchBound, FewEpochNullFindsAreRare) {
  int null_found = 0, right = 0, found = 0;
  for (int epochs : {4, 5, 6, 8, 12}) {
    for (std::uint64_t seed = 100; seed < 140; ++seed) {
      for (bool sig : {false, true}) {
        auto spec = physical(epochs);
        spec.boundary_signature = sig;
        const auto s = make_synthetic_trace(spec, seed * 7919 + 17);
        const auto seg = detect_epochs(s.trace);
        if (!seg.found) continue;
        if (!sig) {
          ++null_found;
          std::printf("null twin found: epochs %d seed %llu conf %.2f: %s\n", epochs,
                      static_cast<unsigned long long>(seed), seg.confidence, seg.reason.c_str());
        } else {
          ++found;
          right += std::abs(seg.period_s - s.truth.period_s) / s.truth.period_s <= 0.03;
        }
      }
    }
  }
  std::printf("null twin: %d of 200 found; signature twin: %d found, %d right\n", null_found, found,
              right);
  EXPECT_LE(null_found, 5);
  EXPECT_GE(right, 32);
}

}  // namespace
}  // namespace epochcast
