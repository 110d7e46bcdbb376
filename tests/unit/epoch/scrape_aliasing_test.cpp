// Prometheus read-backs (scrape aliasing) on synthetic traces: the impairment itself, and the
// detector's precision on it over several seeds (bench slices "scrape aliasing ...").
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>

#include "epochcast/core/error.hpp"
#include "epochcast/epoch/detect.hpp"
#include "eval/synthetic.hpp"

namespace epochcast {
namespace {

// The base run replayed twice as fast (0.05 s series, 2.5 s epochs), scraped every 0.1 s.
SyntheticSpec twice(double jitter_s) {
  SyntheticSpec s;
  s.epochs = 8;
  s.interval_s = 0.05;
  s.period_s = 2.5;
  s.scrape_s = 0.1;
  s.scrape_jitter_s = jitter_s;
  return s;
}

// Where each read-back value came from in the series before the scrape (same seed: the scrape
// draws come after every other draw, so that series is the same). Power is continuous noise, so
// a value identifies its sample.
std::vector<long> source_indices(const SyntheticTrace& read_back, const SyntheticTrace& series) {
  std::map<double, long> where;
  const auto& src = series.trace.find(Metric::kPower)->values;
  for (std::size_t i = 0; i < src.size(); ++i) where.emplace(src[i], static_cast<long>(i));
  std::vector<long> idx;
  for (double v : read_back.trace.find(Metric::kPower)->values) {
    const auto it = where.find(v);
    idx.push_back(it == where.end() ? -1 : it->second);
  }
  return idx;
}

TEST(ScrapeAliasing, ReadBackIsRegularButRepeatsAndSkipsValues) {
  for (double jitter : {0.0, 0.02}) {
    SyntheticSpec spec = twice(jitter);
    const auto rb = make_synthetic_trace(spec, 11);
    spec.scrape_s = 0;
    const auto series = make_synthetic_trace(spec, 11);
    ASSERT_GT(rb.trace.size(), 100u);
    for (std::size_t i = 1; i < rb.trace.size(); ++i)
      ASSERT_NEAR(rb.trace.time_s[i] - rb.trace.time_s[i - 1], 0.1, 1e-9) << i;
    for (const auto& c : rb.trace.channels) ASSERT_EQ(c.values.size(), rb.trace.size());
    const auto idx = source_indices(rb, series);
    int repeats = 0, skips = 0;
    for (std::size_t i = 1; i < idx.size(); ++i) {
      ASSERT_GE(idx[i], 0) << "value " << i << " is not from the series";
      ASSERT_GE(idx[i], idx[i - 1]);
      repeats += idx[i] == idx[i - 1];
      skips += idx[i] - idx[i - 1] >= 3;  // a 0.1 s grid over a 0.05 s series steps by 2
    }
    std::printf("jitter %.0f ms: %zu read-back samples, %d repeated, %d skipped\n", 1000 * jitter, idx.size(),
                repeats, skips);
    if (jitter == 0) {
      EXPECT_EQ(repeats, 0);
      EXPECT_EQ(skips, 0);
    } else {
      // sd 20 ms against a 50 ms series: steps of 1 or 3 are common, a repeat (a scrape later
      // than the next grid point's) rarer.
      EXPECT_GT(repeats, 0);
      EXPECT_GT(skips, 10);
    }
    // The truth moves with the read-back's first grid point; the epochs stay the same length.
    ASSERT_EQ(rb.truth.epochs.size(), series.truth.epochs.size());
    EXPECT_DOUBLE_EQ(rb.truth.period_s, series.truth.period_s);
    const double shift = series.truth.epochs[0].start_s - rb.truth.epochs[0].start_s;
    EXPECT_GE(shift, 0.0);
    EXPECT_LT(shift, 0.2);
  }
}

TEST(ScrapeAliasing, BadSpecIsRefused) {
  SyntheticSpec spec = twice(0.02);
  spec.scrape_s = -0.1;
  EXPECT_THROW((void)make_synthetic_trace(spec, 1), Error);
  spec.scrape_s = 0.1;
  spec.scrape_jitter_s = std::nan("");
  EXPECT_THROW((void)make_synthetic_trace(spec, 1), Error);
  spec.scrape_jitter_s = 0;
  spec.scrape_s = 1e-12;  // a grid of 1e13 points
  EXPECT_THROW((void)make_synthetic_trace(spec, 1), Error);
}

// Precision over seeds: whatever the detector reports as found on a read-back is within 3 %,
// and most read-backs are found (the bench measures 50 seeds per slice; these are 20 others).
TEST(ScrapeAliasing, FoundPeriodsAreRightOverSeeds) {
  struct Case {
    const char* name;
    SyntheticSpec spec;
    int min_found;
  };
  SyntheticSpec once;
  once.epochs = 8;
  once.scrape_s = 0.1;
  once.scrape_jitter_s = 0.01;
  SyntheticSpec four = twice(0.02);
  four.epochs = 4;
  const Case cases[] = {{"1x, sd 10 ms", once, 18}, {"2x, sd 20 ms", twice(0.02), 18}, {"2x, 4 epochs", four, 16}};
  for (const auto& c : cases) {
    int found = 0, wrong = 0;
    for (std::uint64_t seed = 1000; seed < 1020; ++seed) {
      const auto s = make_synthetic_trace(c.spec, seed);
      const auto seg = detect_epochs(s.trace);
      if (!seg.found) continue;
      ++found;
      const double err = std::abs(seg.period_s - s.truth.period_s) / s.truth.period_s;
      if (err > 0.03) {
        ++wrong;
        ADD_FAILURE() << c.name << " seed " << seed << ": " << seg.period_s << " s vs " << s.truth.period_s
                      << " s (conf " << seg.confidence << ") " << seg.reason;
      }
    }
    std::printf("%s: %d/20 found, %d wrong\n", c.name, found, wrong);
    EXPECT_GE(found, c.min_found) << c.name;
  }
}

}  // namespace
}  // namespace epochcast
