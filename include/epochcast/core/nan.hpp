// A missing reading: every channel stores NaN where a sample is absent. Defined once, so the
// unity build of scripts/build.sh (several sources in one translation unit) sees no duplicates.
#pragma once

#include <limits>

namespace epochcast {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace epochcast
