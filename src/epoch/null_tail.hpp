// Extreme-value tail of a null: the surrogates' best scores are maxima over many hypotheses, so
// their distribution is near a Gumbel; fitted to them (method of moments), it gives the
// probability that a surrogate scores at least x beyond the 1 / (count + 1) that counting can
// resolve. The whole-region search reports it (region_search.cpp), the arbitration accepts a
// search-alone hypothesis only when it is tiny against both nulls (arbitration.cpp).
#pragma once

#include <span>

namespace epochcast::detail {

// At least this many maxima to fit two parameters with any stability (19 block copies pass).
inline constexpr int kTailMinMaxima = 15;

// P(max >= x) under the Gumbel fitted to `maxima` (mean and standard deviation: beta =
// sd * sqrt(6) / pi, mu = mean - 0.5772 beta); 1 when there are fewer than kTailMinMaxima or
// they do not spread.
double gumbel_tail_p(std::span<const double> maxima, double x);

}  // namespace epochcast::detail
