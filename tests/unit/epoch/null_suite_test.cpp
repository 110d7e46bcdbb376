// Issue 23's null suite in CI: phase-randomised surrogates and block-scrambled copies of the
// training region of every shared trace. Every find is false; at most 2 % of each kind may be
// found, of any confidence. 6 traces x 17 copies = 102 of each kind (detect_bench --null-real
// runs 100 of each kind per trace).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "epochcast/epoch/detect.hpp"
#include "epochcast/epoch/nulls.hpp"
#include "eval/variants.hpp"

namespace epochcast {
namespace {

DetectOptions null_tested() {
  DetectOptions o;
  return o;
}

std::pair<std::size_t, std::size_t> training_rows(const Trace& t, double from_s, double to_s) {
  const auto b = std::lower_bound(t.time_s.begin(), t.time_s.end(), from_s) - t.time_s.begin();
  const auto e = std::upper_bound(t.time_s.begin(), t.time_s.end(), to_s) - t.time_s.begin();
  return {static_cast<std::size_t>(b), static_cast<std::size_t>(e)};
}

TEST(NullSuite, AtMostTwoPercentOfNullCopiesFound) {
  const std::string dir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";
  constexpr int kPerTrace = 17;
  int copies[2] = {0, 0}, found[2] = {0, 0};
  std::string finds;
  for (const char* name : testing::kRealTraceNames) {
    const auto base = testing::load_real_base(dir, name);
    const auto [b, e] = training_rows(base.with_host, base.train_begin_s, base.train_end_s);
    ASSERT_GT(e, b + 24) << name;
    const double dt = base.with_host.median_interval_s();
    const auto per = static_cast<std::size_t>(std::max(1.0, base.truth.period_s / dt));
    for (int k = 0; k < kPerTrace; ++k)
      for (int kind = 0; kind < 2; ++kind) {
        // Not the bench's seeds (100003 k + 17 + kind).
        const std::uint64_t seed = 7777ULL + 31ULL * static_cast<std::uint64_t>(k) + static_cast<std::uint64_t>(kind);
        const Trace t = kind == 0 ? phase_randomised_trace(base.with_host, b, e, seed)
                                  : block_scrambled_trace(base.with_host, b, e, std::max<std::size_t>(1, per / 4),
                                                          std::max<std::size_t>(2, 3 * per / 4), seed);
        const auto seg = detect_epochs(t, null_tested());
        ++copies[kind];
        if (seg.found) {
          ++found[kind];
          finds += std::string(kind ? "scrambled " : "phase ") + name + ": " + seg.reason + "\n";
        }
      }
  }
  EXPECT_EQ(copies[0], 102);
  EXPECT_LE(found[0], 2) << finds;  // <= 2 % of 102
  EXPECT_LE(found[1], 2) << finds;
}

// The surrogate keeps each channel's values (amplitude-adjusted) and its length; only the
// region changes, and it does change.
TEST(NullSuite, SurrogatesKeepValuesOutsideAndTheDistributionInside) {
  const std::string dir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";
  const auto base = testing::load_real_base(dir, "vgg16_224_bs32_fp32");
  const auto [b, e] = training_rows(base.with_host, base.train_begin_s, base.train_end_s);
  const Trace t = phase_randomised_trace(base.with_host, b, e, 42);
  const Trace s = block_scrambled_trace(base.with_host, b, e, 10, 30, 42);
  for (const Trace* x : {&t, &s}) {
    ASSERT_EQ(x->size(), base.with_host.size());
    const auto& orig = base.with_host.find(Metric::kMemUtil)->values;
    const auto& got = x->find(Metric::kMemUtil)->values;
    for (std::size_t i = 0; i < b; ++i) EXPECT_EQ(got[i], orig[i]);
    for (std::size_t i = e; i < orig.size(); ++i) EXPECT_EQ(got[i], orig[i]);
    std::vector<double> a(orig.begin() + static_cast<long>(b), orig.begin() + static_cast<long>(e));
    std::vector<double> c(got.begin() + static_cast<long>(b), got.begin() + static_cast<long>(e));
    EXPECT_NE(a, c);
    std::sort(a.begin(), a.end());
    std::sort(c.begin(), c.end());
    if (x == &s) EXPECT_EQ(a, c);  // a permutation
    else
      for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], c[i], 1e-9 * (1 + std::abs(a[i])));  // AAFT: same values
  }
}

}  // namespace
}  // namespace epochcast
