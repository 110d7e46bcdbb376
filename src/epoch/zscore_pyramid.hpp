// Step 3 of detection (docs/detection.md "Method" 3-4): robust z-scores of every channel over
// the busy region, their averaging pyramid, and the combined autocorrelation over them.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include "busy_region.hpp"
#include "grid.hpp"
#include "signal.hpp"

namespace epochcast::detail {

// Samples per pyramid level used for the ACF: >= 1,024 periods of the longest lag (16).
inline constexpr std::size_t kAcfWindow = 16384;

// A channel's z-score pyramid (level l+1 = pairwise means of level l, down to < 64 samples).
// Levels 0-3 of a long series are read only in their centred ACF windows, so only those windows
// are stored (one sweep writes them, level 4 whole and level 5); the whole levels are recomputed
// from the source (same formula, same values) when something asks for them, e.g. boundary
// matching when the period is short.
struct ZPyramid {
  std::vector<signal::Buffer> levels;  // levels[l] starts at level index first[l] (l < 4)
  std::vector<std::size_t> len;        // each level's whole length
  std::array<std::size_t, 4> first{};
  std::span<const double> source;  // the channel's region
  double base = 0, slope = 0, inv = 1;
  bool full = true;  // else levels 0-3 hold (at least) their centred kAcfWindow windows
};

// Robust z-score of a region of one channel: linear trend removed, scaled by the MAD of the
// residual, clipped; returned as its averaging pyramid. Empty when the channel is constant
// there. The line, median and MAD come from a subsample of evenly spread blocks (at most 16384
// values: plenty for three numbers), so the only full sweep over the channel is the one writing
// levels 0-3. With `check`, that sweep also counts readings outside [lo, hi] or NaN; `bad` gets
// the count (then the result is meaningless and the caller repairs the channel first).
ZPyramid robust_z_pyramid(std::span<const double> y, bool check, double lo, double hi, std::size_t& bad);

// Every non-constant channel's pyramid over the region.
struct Analysis {
  std::vector<Metric> metrics;
  mutable std::vector<ZPyramid> pyramid;  // [channel]; levels 0-3 completed on first full use
  std::vector<std::size_t> level_len;     // samples per level
  std::vector<double> weight;             // per channel

  [[nodiscard]] std::size_t levels() const { return level_len.size(); }
  // The whole of one level of one channel.
  std::span<const double> level(std::size_t c, std::size_t l) const;
  // The centred window of at most `cap` samples of one level (the ACF's view).
  std::span<const double> window(std::size_t c, std::size_t l, std::size_t cap) const;
};

// The pyramids of the grid's channels over `region`; channels with a bad reading are repaired
// (and dropped from the grid when mostly missing). False with seg.reason set when no channel is
// left or every one is constant there.
bool build_analysis(Grid& grid, Region region, Analysis& an, Segmentation& seg);

// Subtracts a centred moving average of `width` samples (removes structure slower than the
// periods searched) when the signal is long enough for it to matter.
void high_pass(std::span<double> x, std::size_t width);

std::span<const double> centred_window(std::span<const double> x, std::size_t cap);

// Combined ACF of all channels at `level` over lags [lo, hi], each channel high-passed so
// that only structure shorter than a few times `hi` counts.
std::vector<double> combined_acf(const Analysis& an, std::size_t level, std::size_t lo, std::size_t hi,
                                 bool use_high_pass, std::vector<std::vector<double>>* per_channel = nullptr,
                                 std::size_t window_cap = kAcfWindow);

}  // namespace epochcast::detail
