// Test hooks of the detector (epoch stage only; not part of the public API).
#pragma once

#include <cstddef>
#include <span>

namespace epochcast::detail {

// Whether propose_periods may leave out fine ACF levels beyond the coarse levels' bracket
// whose probe shows nothing that could count (on by default); returns the previous setting. Tests compare both ways.
bool set_acf_level_skip(bool on);
// Whether the whole-region search arbitrates (on by default; issue 23); off gives the detector
// as it was before it (the "before" column of detect_bench --eval-real). Returns the previous setting.
bool set_region_arbitration(bool on);
// The arbitration's "beats the typical null" level (kRegionTypicalAlpha = 0.25 by default, arbitration.cpp),
// for the leave-one-trace-out choice in detect_bench --eval-real. Returns the previous value.
double set_region_typical_alpha(double alpha);
// How many pyramid levels' ACF the last propose_periods on this thread left out.
std::size_t last_skipped_acf_levels();
// The flicker check's epoch-profile amplitude of `raw` at `period_samples` (samples). With
// `shared`, the runs of samples per bin are kept in one per-thread cache across calls and reused
// when the window length and period match, as detection does across its channels; without, made afresh.
double profile_amplitude(std::span<const double> raw, double period_samples, bool shared);

}  // namespace epochcast::detail
