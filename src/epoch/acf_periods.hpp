// The autocorrelation's period candidates (docs/detection.md "Method" 4-5): local peaks of the
// weighted combined ACF on every pyramid level needed, the choice among them, and the refined
// period two levels finer.
#pragma once

#include <atomic>
#include <cstddef>
#include <vector>

#include "zscore_pyramid.hpp"

namespace epochcast::detail {

struct Candidate {
  double period_samples;  // in original samples
  double score;           // combined ACF value
  int level;
};

struct Refined {
  double period_samples = 0;
  double score = 0;
  std::vector<double> per_channel;  // each channel's ACF at the period
};

// Local ACF peaks on every level needed, as periods in original samples (sets the channel
// weights of `an`).
std::vector<Candidate> propose_periods(Analysis& an, double min_lag, double max_lag);
// The strongest peak, unless a shorter one it is a multiple of, or a clearly longer one that
// is no multiple of it, is nearly as strong: epochs contain iterations, so the epoch is the
// longest fundamental.
Candidate choose_period(const Analysis& an, const std::vector<Candidate>& candidates);
// The candidate's period refined two levels finer (parabolic peak), with each channel's ACF there.
Refined refine_period(const Analysis& an, const Candidate& cand);

// Test hook state (detect_internal.hpp): whether fine levels beyond the bracket may be left
// out, and how many the last propose_periods on this thread left out.
extern std::atomic<bool> g_acf_level_skip;
extern thread_local std::size_t t_skipped_acf_levels;

}  // namespace epochcast::detail
