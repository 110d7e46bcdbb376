// Quantisation flicker (docs/detection.md "Method" 7, `resolved`): a quantised channel
// flickering between two adjacent readings (mem util 15 <-> 17 %, an SM clock 1965 <-> 1980 MHz)
// can beat with the sampling into a clean period that is not an epoch; its epoch profile stays
// within about one reading step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace epochcast::detail {

// The runs of samples that share a bin, for one window length and period: the same for every
// channel of a region (they differ only in their values), so made once and reused; each run's
// bin comes from the phase and the phase from the run before, a dependency chain per run.
struct FoldRuns {
  std::size_t n = 0;
  double period_samples = 0;
  std::vector<std::uint32_t> bin;  // bins <= 256
  std::vector<std::size_t> len;
};

// Largest deviation of a channel's epoch profile (raw units) from its median, folded at the
// period over a centred window (at least 16 periods).
double profile_amplitude(std::span<const double> raw, double period_samples, FoldRuns& runs);
// Whether that profile reaches 2 reading steps of the channel's readings.
bool profile_resolved(std::span<const double> raw, std::span<const double> readings, double period_samples,
                      FoldRuns& runs);
// True when the region's values span at most one reading step (e.g. only 1965 and 1980 MHz).
bool toggles_between_two_readings(std::span<const double> raw, std::span<const double> readings);

}  // namespace epochcast::detail
