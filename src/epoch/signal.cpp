#include "signal.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace epochcast::signal {

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

double quantile(std::span<const double> x, double q) {
  if (x.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> copy(x.begin(), x.end());
  const auto k = static_cast<std::size_t>(
      std::clamp(q, 0.0, 1.0) * static_cast<double>(copy.size() - 1) + 0.5);
  std::nth_element(copy.begin(), copy.begin() + static_cast<std::ptrdiff_t>(k), copy.end());
  return copy[k];
}

double median(std::span<const double> x) { return quantile(x, 0.5); }

double quantile_sampled(std::span<const double> x, double q, std::size_t max_count) {
  if (x.size() <= max_count) return quantile(x, q);
  const std::size_t stride = (x.size() + max_count - 1) / max_count;
  std::vector<double> sample;
  sample.reserve(x.size() / stride + 1);
  for (std::size_t i = 0; i < x.size(); i += stride) sample.push_back(x[i]);
  return quantile(sample, q);
}

std::vector<double> moving_average(std::span<const double> x, std::size_t width) {
  const std::size_t n = x.size();
  std::vector<double> out(n);
  if (n == 0) return out;
  width = std::max<std::size_t>(1, width);
  const std::size_t left = (width - 1) / 2;
  const std::size_t right = width - 1 - left;
  std::vector<double> prefix(n + 1, 0.0);
  for (std::size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + x[i];
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t a = i >= left ? i - left : 0;
    const std::size_t b = std::min(n, i + right + 1);
    out[i] = (prefix[b] - prefix[a]) / static_cast<double>(b - a);
  }
  return out;
}

std::vector<double> halve(std::span<const double> x) {
  std::vector<double> out;
  out.reserve(x.size() / 2);  // filled once, not zeroed first
  for (std::size_t i = 0; i + 1 < x.size(); i += 2) out.push_back(0.5 * (x[i] + x[i + 1]));
  return out;
}

void autocorrelation(std::span<const double> x, std::size_t lo, std::size_t hi,
                     std::vector<double>& out) {
  out.assign(hi >= lo ? hi - lo + 1 : 0, 0.0);
  const std::size_t n = x.size();
  double energy = 0;
  for (double v : x) energy += v * v;
  if (energy <= 0) return;
  const double* p = x.data();
  for (std::size_t k = lo; k <= hi && k < n; ++k) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;  // independent sums let the compiler vectorise
    const std::size_t m = n - k;
    std::size_t i = 0;
    for (; i + 4 <= m; i += 4) {
      s0 += p[i] * p[i + k];
      s1 += p[i + 1] * p[i + 1 + k];
      s2 += p[i + 2] * p[i + 2 + k];
      s3 += p[i + 3] * p[i + 3 + k];
    }
    for (; i < m; ++i) s0 += p[i] * p[i + k];
    out[k - lo] = (s0 + s1 + s2 + s3) / energy;
  }
}

double parabolic_offset(double a, double b, double c) {
  const double denom = a - 2 * b + c;
  if (!(std::abs(denom) > 1e-15)) return 0.0;
  return std::clamp(0.5 * (a - c) / denom, -0.5, 0.5);
}

}  // namespace epochcast::signal
