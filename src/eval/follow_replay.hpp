// A growing trace replayed into the live Detector, as `epochcast detect --follow` feeds it
// (src/service/follow.cpp pushes the reader's whole trace so far after each poll): when does the
// first confident answer come, and what is it. Used by `detect_bench --eval-long` and
// tests/unit/epoch/chained_runs_test.cpp.
#pragma once

#include "epochcast/epoch/detect.hpp"
#include "epochcast/trace/trace.hpp"

namespace epochcast::eval {

struct FollowOutcome {
  bool confident = false;      // an answer with found and confidence >= the bar came
  double at_s = 0;             // trace time of the first sample after which it came
  double period_s = 0;         // its period
  double confidence = 0;
  std::size_t pushes = 0, runs = 0;  // polls, and how many of them recomputed
};

// Pushes the samples of `trace` up to `stop_s` in polls of `poll_s` seconds of samples (at
// least one sample each) and stops at the first answer found with confidence >= `bar`.
[[nodiscard]] FollowOutcome replay_follow(const Trace& trace, double stop_s, double poll_s, double bar = 0.5,
                                          const DetectOptions& options = {});

}  // namespace epochcast::eval
