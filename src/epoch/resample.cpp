// Uniform resampling of a channel and gap filling (declared in signal.hpp).
#include "signal.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

// No fused multiply-add in this file (why: fp_contract_off_begin.hpp).
#include "fp_contract_off_begin.hpp"

#include "signal_vec.hpp"

namespace epochcast::signal {
using namespace vec;

std::vector<double> resample_uniform(std::span<const double> time_s, std::span<const double> values,
                                     double dt, std::size_t count) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> out(count, kNaN);
  const std::size_t n = std::min(time_s.size(), values.size());
  if (n == 0) return out;
  std::size_t i = 0;  // last source index with time_s[i] <= t (or 0)
  for (std::size_t j = 0; j < count; ++j) {
    const double t = static_cast<double>(j) * dt;
    while (i + 1 < n && time_s[i + 1] <= t) ++i;
    const double t0 = time_s[i];
    const double v0 = values[i];
    if (i + 1 < n && t0 <= t) {
      const double t1 = time_s[i + 1];
      const double v1 = values[i + 1];
      const double span = t1 - t0;
      if (std::isfinite(v0) && std::isfinite(v1) && span > 0 && span <= 2.5 * dt) {
        out[j] = v0 + (v1 - v0) * (t - t0) / span;
        continue;
      }
      // Nearest finite neighbour within 0.6 dt.
      const double d0 = t - t0;
      const double d1 = t1 - t;
      if (std::isfinite(v0) && d0 <= 0.6 * dt && (d0 <= d1 || !std::isfinite(v1))) {
        out[j] = v0;
      } else if (std::isfinite(v1) && d1 <= 0.6 * dt) {
        out[j] = v1;
      }
    } else if (std::isfinite(v0) && std::abs(t - t0) <= 0.6 * dt) {
      out[j] = v0;
    }
  }
  return out;
}

double fill_gaps(std::vector<double>& x) {
  const std::size_t n = x.size();
  if (n == 0) return 1.0;
  std::size_t missing = 0;
  std::size_t prev = n;  // index of the previous finite value, n = none yet
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) {
      ++missing;
      continue;
    }
    if (prev == n) {
      for (std::size_t k = 0; k < i; ++k) x[k] = x[i];
    } else if (i > prev + 1) {
      const double a = x[prev];
      const double b = x[i];
      const double len = static_cast<double>(i - prev);
      for (std::size_t k = prev + 1; k < i; ++k)
        x[k] = a + (b - a) * static_cast<double>(k - prev) / len;
    }
    prev = i;
  }
  if (prev == n) return 1.0;
  for (std::size_t k = prev + 1; k < n; ++k) x[k] = x[prev];
  return static_cast<double>(missing) / static_cast<double>(n);
}

}  // namespace epochcast::signal

#include "fp_contract_off_end.hpp"
