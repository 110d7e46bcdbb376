// Issue 23's invariances: the same run time-scaled (0.5x, 2x, 10x), decimated (2x, 5x),
// up-sampled (2x, linear), cropped, with channels removed: the same period (within 2 %) or an
// abstention, never a different confident answer. Time scaling changes no sample, so there the
// answer must be the same (found or not) and the period scale exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "epochcast/epoch/detect.hpp"
#include "eval/variants.hpp"

namespace epochcast {
namespace {

DetectOptions null_tested() {
  DetectOptions o;
  return o;
}

Trace time_scaled(const Trace& t, double f) {
  Trace s = t;
  for (double& x : s.time_s) x *= f;
  return s;
}

Trace upsampled(const Trace& t, int k) {
  Trace s;
  s.source = t.source, s.format = t.format, s.gpu = t.gpu, s.start_unix_s = t.start_unix_s;
  s.first_timestamp = t.first_timestamp;
  const std::size_t n = t.size();
  for (std::size_t i = 0; i + 1 < n; ++i)
    for (int j = 0; j < k; ++j) s.time_s.push_back(t.time_s[i] + (t.time_s[i + 1] - t.time_s[i]) * j / k);
  s.time_s.push_back(t.time_s.back());
  for (const auto& c : t.channels) {
    Channel& o = s.channel(c.metric);
    for (std::size_t i = 0; i + 1 < n; ++i)
      for (int j = 0; j < k; ++j) o.values[i * k + static_cast<std::size_t>(j)] = c.values[i] + (c.values[i + 1] - c.values[i]) * j / k;
    o.values.back() = c.values.back();
  }
  return s;
}

class Invariance : public ::testing::TestWithParam<const char*> {};

TEST_P(Invariance, TimeScalingChangesOnlyTheUnits) {
  const std::string dir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";
  const auto base = testing::load_real_base(dir, GetParam());
  const auto o = detect_epochs(base.with_host, null_tested());
  for (double f : {0.5, 2.0, 10.0}) {
    const auto s = detect_epochs(time_scaled(base.with_host, f), null_tested());
    EXPECT_EQ(s.found, o.found) << f << ": " << s.reason << " | original: " << o.reason;
    EXPECT_NEAR(s.confidence, o.confidence, 1e-9) << f;
    // The whole-region search works in samples (exact); the other proposers' sub-sample
    // refinement, whose period the arbitration keeps or averages in, moved 0.13 % on vgg16 at
    // 10x (2026-12-02). The bar for a changed view is 2 %.
    if (s.found && o.found) EXPECT_NEAR(s.period_s / f, o.period_s, 5e-3 * o.period_s) << f;
  }
}

TEST_P(Invariance, ResampledCroppedOrFewerChannelsSamePeriodOrAbstain) {
  const std::string dir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";
  const auto base = testing::load_real_base(dir, GetParam());
  const auto o = detect_epochs(base.with_host, null_tested());
  const double truth = base.truth.period_s;
  const testing::BuiltVariant whole = testing::whole(base.with_host);
  std::vector<std::pair<std::string, Trace>> views = {
      {"decimated 2x", testing::decimate(whole, 2).trace},
      {"decimated 5x", testing::decimate(whole, 5).trace},
      {"up-sampled 2x", upsampled(base.with_host, 2)},
      {"no host log", base.gpu_only},
      {"idle tail cut", testing::keep_if(whole, [&](std::size_t, double r) { return r <= base.train_end_s; }).trace},
  };
  for (const auto& [name, t] : views) {
    const auto s = detect_epochs(t, null_tested());
    if (!s.found || s.confidence < 0.5) continue;  // an abstention is always allowed
    if (!base.truth.validation) {
      ADD_FAILURE() << name << ": a period on a run without a boundary signature: " << s.reason;
      continue;
    }
    // A confident answer: the original's (within 2 %) when it has one, else the truth's (5 %).
    if (o.found)
      EXPECT_LE(std::abs(s.period_s - o.period_s) / o.period_s, 0.02) << name << ": " << s.reason;
    else
      EXPECT_LE(std::abs(s.period_s - truth) / truth, 0.05) << name << ": " << s.reason;
  }
}

INSTANTIATE_TEST_SUITE_P(H200, Invariance, ::testing::ValuesIn(testing::kRealTraceNames));

}  // namespace
}  // namespace epochcast
