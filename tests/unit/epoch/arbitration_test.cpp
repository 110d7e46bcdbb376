// The arbitration's search-alone tail class when the other proposers' period (found, or their
// best guess below the bar) is a whole multiple of the search's, and the confirmed class's
// period (src/epoch/arbitration.cpp), on hand-made hypotheses: the rules themselves, apart from
// any trace.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../../src/epoch/arbitration.hpp"

namespace epochcast {
namespace {

constexpr double kDt = 0.1, kP = 40;  // the search's period: 40 samples of 0.1 s

// A significant search beyond both nulls' tail: 30 inner boundaries every kP samples whose
// evidence is `ev(k)`.
template <class F>
detail::RegionProposal search(F ev) {
  detail::RegionProposal r;
  r.kind = detail::RegionProposal::Kind::kRun;
  auto& h = r.h;
  h.ok = true;
  h.period_samples = kP;
  h.epochs = 31;
  h.p_value = h.p_phase = 0.01;
  h.p_block = 0.05;
  h.p_tail = 1e-4;
  h.channels = {Metric::kGpuUtil};
  for (int k = 0; k <= 31; ++k) h.boundaries_s.push_back(k * kP * kDt);
  for (int k = 0; k < 30; ++k) h.evidence.push_back(ev(k));
  h.why = "test search";
  return r;
}

Segmentation others(bool found, double period_s) {
  Segmentation e;
  e.found = found;
  e.period_s = found ? period_s : 0;
  e.candidate_period_s = period_s;
  e.confidence = found ? 0.9 : 0.3;
  e.reason = "test others";
  return e;
}

// Evidence alike at every boundary (a little spread, no phase of 3 stronger).
double alike(int k) { return 3.0 + 0.1 * ((k * 7) % 5); }
// Every third boundary much stronger: the 3-fold period is a structure of its own.
double every_third(int k) { return k % 3 == 0 ? 6.0 : 3.0 + 0.1 * ((k * 7) % 5); }

TEST(ArbitrationMultiple, OthersFoundThreeOfItsEpochs) {
  const auto seg = detail::arbitrate(others(true, 3 * kP * kDt), search(alike), DetectOptions{}, kDt);
  ASSERT_TRUE(seg.found) << seg.reason;
  EXPECT_DOUBLE_EQ(seg.confidence, 0.55);
  EXPECT_DOUBLE_EQ(seg.period_s, kP * kDt);
  EXPECT_NE(seg.reason.find("their period is 3 of its epochs"), std::string::npos) << seg.reason;
}

TEST(ArbitrationMultiple, OthersBestGuessThreeOfItsEpochs) {
  const auto seg = detail::arbitrate(others(false, 3 * kP * kDt), search(alike), DetectOptions{}, kDt);
  ASSERT_TRUE(seg.found) << seg.reason;
  EXPECT_DOUBLE_EQ(seg.confidence, 0.55);
  EXPECT_NE(seg.reason.find("their best guess is 3 of its epochs"), std::string::npos) << seg.reason;
}

// Not a whole multiple (1.5x): no support, no period.
TEST(ArbitrationMultiple, NotAWholeMultiple) {
  const auto seg = detail::arbitrate(others(false, 1.5 * kP * kDt), search(alike), DetectOptions{}, kDt);
  EXPECT_FALSE(seg.found) << seg.reason;
  EXPECT_LT(seg.confidence, 0.5);
}

// One phase of the three carries more evidence: the others' period is an epoch with events
// between its boundaries, and the search's period is not taken (kPhaseAlpha).
TEST(ArbitrationMultiple, OnePhaseStrongerIsNoSupport) {
  for (bool found : {true, false}) {
    const auto seg = detail::arbitrate(others(found, 3 * kP * kDt), search(every_third), DetectOptions{}, kDt);
    EXPECT_FALSE(seg.found && seg.period_s == kP * kDt) << found << ": " << seg.reason;
  }
}

// The even grid's best was 2 of the chain's epochs (region.grid_multiple), the chain near the
// others' guess beat its nulls: taken when its boundaries, two at a time, carry alike evidence,
// in the tail class (0.55) even where the others found that period (the chain was steered by it,
// so it is no confirmation at 0.95); refused when every other boundary is stronger.
double every_other(int k) { return k % 2 == 0 ? 6.0 : 3.0 + 0.1 * ((k * 7) % 5); }

TEST(ArbitrationMultiple, GridAtTwiceTheChainsPeriod) {
  for (bool found : {true, false}) {
    auto r = search(alike);
    r.grid_multiple = 2;
    const auto seg = detail::arbitrate(others(found, kP * kDt), r, DetectOptions{}, kDt);
    ASSERT_TRUE(seg.found) << found << ": " << seg.reason;
    EXPECT_DOUBLE_EQ(seg.confidence, 0.55) << found;
    EXPECT_DOUBLE_EQ(seg.period_s, kP * kDt);
    EXPECT_NE(seg.reason.find("the even grid's best was 2 of these epochs"), std::string::npos) << seg.reason;
    auto alternating = search(every_other);
    alternating.grid_multiple = 2;
    const auto no = detail::arbitrate(others(found, kP * kDt), alternating, DetectOptions{}, kDt);
    EXPECT_FALSE(no.found && no.period_s == kP * kDt) << found << ": " << no.reason;
  }
}

// Confirmed (both nulls beaten, the others' period within 5 %): with both of the run's edges
// in the search's boundaries, the period is the mean of the two estimates (the search's is the
// run's mean epoch edge to edge); without them, the others' period stands.
TEST(ArbitrationConfirmed, MeanOfBothEstimatesWithBothEdges) {
  const double theirs = 1.04 * kP * kDt;  // the autocorrelation's lag, 4 % longer
  for (bool edges : {true, false}) {
    auto r = search(alike);
    r.both_edges = edges;
    const auto seg = detail::arbitrate(others(true, theirs), r, DetectOptions{}, kDt);
    ASSERT_TRUE(seg.found) << seg.reason;
    EXPECT_DOUBLE_EQ(seg.confidence, 0.95);
    EXPECT_NE(seg.reason.find("confirmed by the test search"), std::string::npos) << seg.reason;
    if (edges) {
      EXPECT_DOUBLE_EQ(seg.period_s, 0.5 * (theirs + kP * kDt));
      EXPECT_NEAR(seg.period_samples, seg.period_s / kDt, 1e-9);
      EXPECT_NE(seg.reason.find("period their mean"), std::string::npos) << seg.reason;
    } else {
      EXPECT_DOUBLE_EQ(seg.period_s, theirs);
      EXPECT_EQ(seg.reason.find("period their mean"), std::string::npos) << seg.reason;
    }
  }
}

}  // namespace
}  // namespace epochcast
