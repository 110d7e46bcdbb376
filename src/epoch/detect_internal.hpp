// Test hooks of the detector (epoch stage only; not part of the public API).
#pragma once

#include <cstddef>

namespace epochcast::detail {

// Whether propose_periods may leave out fine ACF levels beyond the coarse levels' bracket
// whose probe shows nothing that could count (on by default); returns the previous setting. Tests compare both ways.
bool set_acf_level_skip(bool on);
// How many pyramid levels' ACF the last propose_periods on this thread left out.
std::size_t last_skipped_acf_levels();

}  // namespace epochcast::detail
