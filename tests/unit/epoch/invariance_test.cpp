// Issue 23's invariances: the same run time-scaled (0.5x, 2x, 10x), decimated (2-10x),
// up-sampled (2x, 3x, linear), cropped, with channels removed: the same period (within 2 %) or
// an abstention, never a different confident answer; on the shared traces and on synthetic
// runs. Written in every trace format: format_invariance_test.cpp. Time scaling changes no sample, so there the
// answer must be the same (found or not) and the period scale exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "epochcast/epoch/detect.hpp"
#include <fmt/format.h>

#include "eval/synthetic.hpp"
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

// Every view issue 23 item 4 names: decimated 2-10x, up-sampled 2x and 3x (linear), cropped
// (idle tail cut, half and one and a half epochs of the head cut, both ends), channels removed
// (the host log, all but GPU utilisation, all but power, memory utilisation). Views of a trace
// `t` whose training (truth) runs from `begin_s` to `end_s` with mean epoch `period_s`.
std::vector<std::pair<std::string, Trace>> views_of(const Trace& t, const Trace* gpu_only, double begin_s, double end_s,
                                                    double period_s) {
  const testing::BuiltVariant w = testing::whole(t);
  std::vector<std::pair<std::string, Trace>> v;
  for (std::size_t k : {2, 3, 5, 10}) v.emplace_back(fmt::format("decimated {}x", k), testing::decimate(w, k).trace);
  v.emplace_back("up-sampled 2x", upsampled(t, 2));
  v.emplace_back("up-sampled 3x", upsampled(t, 3));
  v.emplace_back("idle tail cut", testing::keep_if(w, [&](std::size_t, double r) { return r <= end_s; }).trace);
  for (double cut : {0.5, 1.5})
    v.emplace_back(fmt::format("head cut {} epoch", cut),
                   testing::keep_if(w, [&](std::size_t, double r) { return r >= begin_s + cut * period_s; }).trace);
  v.emplace_back("head 0.5 + tail cut", testing::keep_if(w, [&](std::size_t, double r) {
                   return r >= begin_s + 0.5 * period_s && r <= end_s;
                 }).trace);
  if (gpu_only) v.emplace_back("no host log", *gpu_only);
  v.emplace_back("gpu util only", testing::keep_channels(w, [](Metric m) { return m == Metric::kGpuUtil; }).trace);
  v.emplace_back("power only", testing::keep_channels(w, [](Metric m) { return m == Metric::kPower; }).trace);
  v.emplace_back("without mem util", testing::keep_channels(w, [](Metric m) { return m != Metric::kMemUtil; }).trace);
  return v;
}

// The rule: a view may abstain; a confident answer (found, >= 0.5) must be the original's period
// within 2 % when the original has one, else the truth's within 5 %; a run without a boundary
// signature must give none. Returns the failures, one line each.
std::string check_views(const std::string& what, const Segmentation& o, double truth, bool signature,
                        const std::vector<std::pair<std::string, Trace>>& views) {
  std::string bad;
  for (const auto& [name, t] : views) {
    const auto s = detect_epochs(t);
    if (!s.found || s.confidence < 0.5) continue;
    const std::string at = fmt::format("{} / {}: {:.4g} s at {:.2f}", what, name, s.period_s, s.confidence);
    if (!signature) bad += at + " on a run without a signature | " + s.reason + "\n";
    else if (o.found && std::abs(s.period_s - o.period_s) > 0.02 * o.period_s)
      bad += fmt::format("{}, the original {:.4g} s | {}\n", at, o.period_s, s.reason);
    else if (!o.found && std::abs(s.period_s - truth) > 0.05 * truth)
      bad += fmt::format("{}, the original abstains, truth {:.4g} s | {}\n", at, truth, s.reason);
  }
  return bad;
}

TEST_P(Invariance, ResampledCroppedOrFewerChannelsSamePeriodOrAbstain) {
  const std::string dir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";
  const auto base = testing::load_real_base(dir, GetParam());
  const auto o = detect_epochs(base.with_host);
  const auto views = views_of(base.with_host, &base.gpu_only, base.train_begin_s, base.train_end_s, base.truth.period_s);
  EXPECT_EQ(check_views(GetParam(), o, base.truth.period_s, base.truth.validation, views), "");
}

INSTANTIATE_TEST_SUITE_P(H200, Invariance, ::testing::ValuesIn(testing::kRealTraceNames));

// The same views and time scaling of synthetic runs (truth by construction): 4, 6 and 10 epochs
// with 2-10 % epoch-length variation, a 500 ms-sampled run, a CPU-loader run and a null twin.
struct SynthView {
  const char* name;
  SyntheticSpec spec;
};
std::vector<SynthView> synthetic_views() {
  std::vector<SynthView> v;
  SyntheticSpec a;
  a.epochs = 6, a.period_jitter = 0.05;
  v.push_back({"6 epochs 5 %", a});
  SyntheticSpec b;
  b.epochs = 4, b.period_jitter = 0.02;
  v.push_back({"4 epochs 2 %", b});
  SyntheticSpec c;
  c.epochs = 10, c.period_jitter = 0.10;
  v.push_back({"10 epochs 10 %", c});
  SyntheticSpec d;
  d.epochs = 6, d.interval_s = 0.5, d.period_s = 10;
  v.push_back({"500 ms, 6 epochs", d});
  SyntheticSpec e;
  e.epochs = 6, e.event_at_start = true, e.event_depth = 0.5;
  v.push_back({"CPU loader, 6 epochs", e});
  SyntheticSpec z;
  z.epochs = 6, z.event_depth = 0;
  v.push_back({"NULL 6 epochs", z});
  return v;
}

class SyntheticInvariance : public ::testing::TestWithParam<int> {};

// One seed and a subset of the views (each detection on a synthetic run costs ~0.1-0.4 s: the
// search's surrogates); the shared traces above take every view.
TEST_P(SyntheticInvariance, SameAnswerOrAbstainUnderEveryView) {
  const auto sv = synthetic_views()[static_cast<std::size_t>(GetParam())];
  const auto s = make_synthetic_trace(sv.spec, 11);
  const auto o = detect_epochs(s.trace);
  for (double f : {0.5, 10.0}) {
    const auto t = detect_epochs(time_scaled(s.trace, f));
    EXPECT_EQ(t.found, o.found) << sv.name << " x" << f << ": " << t.reason;
    if (t.found && o.found) EXPECT_NEAR(t.period_s / f, o.period_s, 5e-3 * o.period_s) << sv.name << " x" << f;
  }
  const auto& ep = s.truth.epochs;
  auto views = views_of(s.trace, nullptr, ep.front().start_s, ep.back().end_s, s.truth.period_s);
  const std::vector<std::string> keep = {"decimated 2x", "decimated 5x", "up-sampled 2x", "head cut 0.5 epoch",
                                         "gpu util only", "power only"};
  std::erase_if(views, [&](const auto& v) { return std::find(keep.begin(), keep.end(), v.first) == keep.end(); });
  ASSERT_EQ(views.size(), keep.size());
  EXPECT_EQ(check_views(sv.name, o, s.truth.period_s, s.truth.has_signature, views), "");
}

INSTANTIATE_TEST_SUITE_P(Synthetic, SyntheticInvariance, ::testing::Range(0, 6));


}  // namespace
}  // namespace epochcast
