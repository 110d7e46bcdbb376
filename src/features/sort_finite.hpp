// The finite values of a window in ascending order, as std::sort orders them, in linear time:
// describe() needs them sorted (percentiles, and the mean summed in that order, as before), and
// a 24 h trace at 10 Hz has windows of 864,000 samples per channel.
#pragma once

#include <span>
#include <vector>

namespace epochcast::detail {

// `out` = the finite values of `samples`, sorted ascending (an LSD radix sort on the values'
// bits, 8 bits a pass, a pass skipped where every value shares its digit: integer-valued
// channels move in 2-3 passes). The same sequence
// std::sort gives (only -0.0 and 0.0 compare equal with other bits; -0.0 comes first).
void sort_finite(std::span<const double> samples, std::vector<double>& out);

}  // namespace epochcast::detail
