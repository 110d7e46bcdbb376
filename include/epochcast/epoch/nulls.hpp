// Null models for epoch detection: copies of a trace with its epoch structure destroyed, used by
// the detector's own significance test (src/epoch/region_search.cpp) and by the null suite
// (`detect_bench --null-real`, tests/unit/epoch/null_suite_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "epochcast/trace/trace.hpp"

namespace epochcast {

// Phase-randomised surrogates of equal-length series, in place: every series gets the SAME
// random Fourier phases (so each one's amplitude spectrum and the cross-spectra between them are
// kept, while the alignment of events in time is destroyed), then each is mapped back onto its
// own sorted original values (amplitude adjustment: the value distribution and reading steps are
// kept exactly, the spectrum approximately). A linear trend is removed before and restored
// after. NaNs are not allowed (fill gaps first). Deterministic for a seed.
void phase_randomise(std::vector<std::vector<double>>& series, std::uint64_t seed);
// The same over spans (each of the same length), writing into `out` (resized).
// amplitude_adjust = false: the plain linear surrogate (values Gaussian-like, spectrum exact up
// to the zero padding), as the detector's own test uses.
void phase_randomise(const std::vector<std::span<const double>>& series, std::uint64_t seed,
                     std::vector<std::vector<double>>& out, bool amplitude_adjust = true);

// Linear interpolation over NaN runs, in place (the ends take the nearest value); false when
// every value is NaN. phase_randomised_trace fills gaps so; the evaluation's null copies too.
bool fill_linear(std::vector<double>& v);

// The trace with samples [begin, end) of every channel replaced by a phase-randomised surrogate
// (gaps filled linearly first, missing samples stay missing); samples outside are unchanged.
[[nodiscard]] Trace phase_randomised_trace(const Trace& trace, std::size_t begin, std::size_t end,
                                           std::uint64_t seed);
// The trace with samples [begin, end) cut into blocks of random length, uniform in
// [min_block, max_block] samples, put back in random order (every channel moved together):
// the local shapes (a validation dip, a loader start-up) survive, their regular spacing does
// not. Samples outside are unchanged; timestamps are not moved.
[[nodiscard]] Trace block_scrambled_trace(const Trace& trace, std::size_t begin, std::size_t end,
                                          std::size_t min_block, std::size_t max_block, std::uint64_t seed);

}  // namespace epochcast
