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
