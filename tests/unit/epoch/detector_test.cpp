// The incremental Detector: samples pushed as they arrive converge to the offline answer.
#include <gtest/gtest.h>

#include <cmath>

#include "epochcast/epoch/detect.hpp"
#include "eval/synthetic.hpp"

namespace epochcast {
namespace {

Trace slice(const Trace& t, std::size_t begin, std::size_t end) {
  Trace out;
  out.first_timestamp = t.first_timestamp;
  out.start_unix_s = t.start_unix_s + t.time_s[begin];
  for (std::size_t i = begin; i < end; ++i) out.time_s.push_back(t.time_s[i] - t.time_s[begin]);
  for (const auto& c : t.channels) {
    auto& dst = out.channel(c.metric).values;
    dst.assign(c.values.begin() + static_cast<std::ptrdiff_t>(begin), c.values.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return out;
}

TEST(Detector, AppendedChunksConvergeToOfflineResult) {
  SyntheticSpec spec;
  spec.epochs = 10;
  const auto s = make_synthetic_trace(spec, 21);
  const auto offline = detect_epochs(s.trace);
  ASSERT_TRUE(offline.found) << offline.reason;

  Detector detector;
  std::size_t pushes = 0, changes = 0;
  double first_found_at_s = -1;
  for (std::size_t i = 0; i < s.trace.size(); i += 10) {
    const bool changed = detector.push(slice(s.trace, i, std::min(s.trace.size(), i + 10)));
    EXPECT_EQ(changed, detector.changed());
    ++pushes;
    changes += changed;
    if (detector.current().found && first_found_at_s < 0) first_found_at_s = detector.trace().duration_s();
  }
  detector.flush();
  EXPECT_EQ(detector.trace().size(), s.trace.size());
  EXPECT_NEAR(detector.trace().time_s.back(), s.trace.time_s.back(), 1e-6);
  ASSERT_TRUE(detector.current().found) << detector.current().reason;
  EXPECT_NEAR(detector.current().period_s, offline.period_s, 1e-9);
  EXPECT_GE(changes, 1u);
  EXPECT_LT(detector.runs(), pushes);  // recomputed only when enough new samples arrived
  // Live use: the period is known after a few epochs, long before the run ends.
  ASSERT_GT(first_found_at_s, 0);
  EXPECT_LT(first_found_at_s, spec.idle_head_s + spec.warmup_s + 6 * spec.period_s);
}

TEST(Detector, WholeTracePrefixesGiveTheSameAnswer) {
  SyntheticSpec spec;
  spec.epochs = 8;
  const auto s = make_synthetic_trace(spec, 22);
  Detector detector;
  for (std::size_t n = 50; n <= s.trace.size(); n += 50) detector.push(slice(s.trace, 0, n));
  detector.push(s.trace);
  detector.flush();
  const auto offline = detect_epochs(s.trace);
  EXPECT_EQ(detector.current().found, offline.found);
  EXPECT_NEAR(detector.current().period_s, offline.period_s, 1e-9);
}

// A slow feed (500 ms samples, 6 s epochs: 12 samples an epoch) recomputes at least every half
// epoch once a candidate period is known, not every 16 samples (1.3 epochs): the live answer
// lags the data by at most half an epoch (detector.cpp, kRecomputeMinSamplesPerHalfEpoch).
TEST(Detector, SlowFeedRecomputesEveryHalfEpoch) {
  SyntheticSpec spec;
  spec.interval_s = 0.5;
  spec.period_s = 6.0;
  spec.epochs = 12;
  const auto s = make_synthetic_trace(spec, 24);
  Detector detector;
  std::size_t last_run_at = 0, runs = 0, widest_gap = 0, gaps = 0;
  double candidate = 0;  // the one the recompute schedule went by
  for (std::size_t i = 0; i < s.trace.size(); ++i) {
    detector.push(slice(s.trace, i, i + 1));
    if (detector.runs() == runs) continue;
    runs = detector.runs();
    if (candidate > 0 && last_run_at > 0) widest_gap = std::max(widest_gap, i - last_run_at), ++gaps;
    candidate = detector.current().candidate_period_s;
    last_run_at = i;
  }
  ASSERT_GT(gaps, 10u) << "a candidate period from early on";
  EXPECT_LE(widest_gap, 6u);  // half of 12 samples an epoch (within the candidate's error)
  detector.flush();
  EXPECT_TRUE(detector.current().found) << detector.current().reason;
}

TEST(Detector, NotChangedWhenNothingNew) {
  SyntheticSpec spec;
  const auto s = make_synthetic_trace(spec, 23);
  Detector detector;
  detector.push(s.trace);
  EXPECT_TRUE(detector.changed());
  EXPECT_FALSE(detector.flush());
  EXPECT_FALSE(detector.changed());
}

}  // namespace
}  // namespace epochcast
