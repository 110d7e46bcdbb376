// The edge-anchored excursion chain, the third proposer, for launch-bound runs
// (docs/detection.md "Method" 10).
//
// A launch-bound loop (lenet5 at ~14 % utilisation) shows its boundaries as a brief *rise*
// (validation keeps the GPU busier than the starved training loop), a few reading steps high,
// and mid-epoch host hiccups look just the same. No single excursion tells a boundary from a
// bump; only their placement can: between the busy region's two idle edges, n epochs put
// n - 1 boundaries near k * span / n. Events are sharp steps (2-sample means, after minus
// before, either direction) seen by at least two activity channels at once; for each n a chain
// (each boundary within 15 % * sqrt(gap in epochs) of where the previous one predicts, so
// epoch jitter does not accumulate against a fixed grid) picks the events that fit, scored by
// the binomial tail of that many teeth hit by chance. The smallest tail over n is compared with
// the same statistic for the same number of events placed at random (Monte Carlo, fixed seed):
// the confidence says how unlikely such an alignment is by chance (0.5 at p = 1 %).
#pragma once

#include "hypothesis.hpp"

namespace epochcast::detail {

// The chain of coincident steps between the busy region's idle edges (both must be idle).
PeriodHypothesis propose_by_edge_chain(const ProposerInput& in);

}  // namespace epochcast::detail
