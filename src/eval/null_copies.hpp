// The null suite's copies of a real trace (issue 23): the training region replaced by data with
// the same local behaviour but no epoch structure, so that every period found on a copy is a
// false find. Used by `detect_bench --null-real` and tests/unit/epoch/null_suite_test.cpp.
//
// Why not the detector's own surrogates (include/epochcast/epoch/nulls.hpp): a phase-randomised
// copy of a window that holds exactly N epochs keeps the lines of its spectrum at k / period,
// so it is still periodic at the period, with another waveform; and any copy of the region
// keeps its length N x period, which span / N turns back into the period. Both made the first
// null suite's finds land on the true period (docs/detection.md, "Null suite").
//
// The rules, fixed before measuring (2026-12-02):
// - The copy's region is redrawn to a length uniform within +/- kNullLengthSpread epochs of the
//   original's, so it is not a whole number of epochs; the samples after it move with it.
// - Line-free phase copy: each channel's power spectrum is averaged over +/- one line spacing
//   (1 / period) before its phases are randomised, so the comb of the epoch's harmonics is
//   replaced by its local mean; one set of random phases for every channel (their relative
//   phases are kept); values mapped back onto each channel's own readings by rank (AAFT).
// - Block bootstrap: blocks of uniform random length in [1/4, 3/4] epoch, each starting at a
//   uniform random sample of the region (not aligned to anything), every channel moved
//   together, concatenated to the new length.
#pragma once

#include <cstddef>
#include <cstdint>

#include "epochcast/trace/trace.hpp"

namespace epochcast::eval {

// Half-width, in epochs, of the uniform range the copy's region length is drawn from: wide
// enough that span / N misses the period by >= 5 % for N <= 10 epochs on most draws.
inline constexpr double kNullLengthSpread = 0.5;

struct NullRegion {
  std::size_t begin = 0, end = 0;  // the training region's samples [begin, end)
  double period_samples = 0;       // the true mean epoch, in samples (sets the line spacing and blocks)
  bool keep_length = false;        // true: the region keeps its length (the diagnostic variant)
};

// Phase-randomised copy with the spectrum's lines smoothed away (see above). Channels with no
// finite value in the region stay missing there; gaps are filled linearly first (no NaN in the copy's region).
[[nodiscard]] Trace line_free_phase_copy(const Trace& trace, const NullRegion& region, std::uint64_t seed);

// Block-bootstrap copy (see above); missing samples travel with their block.
[[nodiscard]] Trace block_bootstrap_copy(const Trace& trace, const NullRegion& region, std::uint64_t seed);

// The new region length for a seed, as both copies draw it (for tests).
[[nodiscard]] std::size_t null_region_length(const NullRegion& region, std::uint64_t seed);

}  // namespace epochcast::eval
