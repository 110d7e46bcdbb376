// Boundary events, the second proposer (docs/detection.md "Method" 9).
//
// Where an epoch ends with validation or a checkpoint, every activity channel drops for a
// moment: a short, deep low-activity episode. With few samples per epoch (500 ms sampling,
// ~10 per epoch) or few epochs the ACF has too few lags to resolve the period, but the
// episodes themselves are plain to see. Events are the local minima of the mean activity
// z-score that lie far below its typical level; the period is the spacing of a comb that
// hits nearly all of them (one missing boundary and one spurious mid-epoch dip tolerated),
// with the busy region's edges as boundaries when the trace is idle outside them.
#pragma once

#include "hypothesis.hpp"

namespace epochcast::detail {

// The comb through the deep short dips (and the idle edges), when one fits.
PeriodHypothesis propose_by_events(const ProposerInput& in);

}  // namespace epochcast::detail
