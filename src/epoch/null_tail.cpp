// Gumbel tail of the surrogates' maxima. docs/detection.md "Whole-region search", 5.
#include "null_tail.hpp"

#include <cmath>

namespace epochcast::detail {

double gumbel_tail_p(std::span<const double> maxima, double x) {
  if (maxima.size() < static_cast<std::size_t>(kTailMinMaxima)) return 1.0;
  double mean = 0;
  for (double v : maxima) mean += v;
  mean /= static_cast<double>(maxima.size());
  double var = 0;
  for (double v : maxima) var += (v - mean) * (v - mean);
  var /= static_cast<double>(maxima.size() - 1);
  if (!(var > 0)) return 1.0;
  constexpr double kEulerGamma = 0.5772156649015329;
  const double beta = std::sqrt(var) * std::sqrt(6.0) / M_PI;
  const double mu = mean - kEulerGamma * beta;
  // 1 - exp(-exp(-t)), written so that tiny tails keep their digits.
  return -std::expm1(-std::exp(-(x - mu) / beta));
}

}  // namespace epochcast::detail
