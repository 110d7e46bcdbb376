// Autocorrelation sweeps and the parabolic peak offset (declared in signal.hpp).
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

namespace {
// x[i] += c over [0, n) (x - m is x + (-m) exactly).
void add_to(double* x, std::size_t n, double c) {
  std::size_t i = 0;
  for (; i + 2 <= n; i += 2) store2(x + i, load2(x + i) + splat(c));
  for (; i < n; ++i) x[i] += c;
}
}  // namespace

namespace {
// r(k) = sum x_i x_{i+k} / energy for k in [lo, hi], k < n (the caller zeroed `out`).
void autocorrelation_base(const double* p, std::size_t n, std::size_t lo, std::size_t hi, double* out) {
  auto dot = [p](std::size_t m, std::size_t k) {
    V2 s0 = splat(0), s1 = splat(0), s2 = splat(0), s3 = splat(0);
    std::size_t i = 0;
    for (; i + 8 <= m; i += 8) {
      s0 += load2(p + i) * load2(p + i + k);
      s1 += load2(p + i + 2) * load2(p + i + 2 + k);
      s2 += load2(p + i + 4) * load2(p + i + 4 + k);
      s3 += load2(p + i + 6) * load2(p + i + 6 + k);
    }
    double s = hsum((s0 + s1) + (s2 + s3));
    for (; i < m; ++i) s += p[i] * p[i + k];
    return s;
  };
  const double energy = dot(n, 0);
  if (!(energy > 0)) return;
  std::size_t k = lo;
  // Four lags per sweep: x[i] is loaded once for all four (the sweep was bound by loads).
  for (; k + 3 <= hi && k + 3 < n; k += 4) {
    const std::size_t m = n - (k + 3);
    V2 a0 = splat(0), a1 = splat(0), a2 = splat(0), a3 = splat(0);
    V2 b0 = splat(0), b1 = splat(0), b2 = splat(0), b3 = splat(0);
    std::size_t i = 0;
    for (; i + 4 <= m; i += 4) {
      const V2 x0 = load2(p + i), x1 = load2(p + i + 2);
      const double* q = p + i + k;
      a0 += x0 * load2(q), b0 += x1 * load2(q + 2);
      a1 += x0 * load2(q + 1), b1 += x1 * load2(q + 3);
      a2 += x0 * load2(q + 2), b2 += x1 * load2(q + 4);
      a3 += x0 * load2(q + 3), b3 += x1 * load2(q + 5);
    }
    const std::array<double, 4> part{hsum(a0 + b0), hsum(a1 + b1), hsum(a2 + b2), hsum(a3 + b3)};
    for (std::size_t j = 0; j < 4; ++j) {
      double s = part[j];
      for (std::size_t t = i; t + k + j < n; ++t) s += p[t] * p[t + k + j];
      out[k + j - lo] = s / energy;
    }
  }
  for (; k <= hi && k < n; ++k) out[k - lo] = dot(n - k, k) / energy;
}

}  // namespace

void autocorrelation(std::span<const double> x, std::size_t lo, std::size_t hi,
                     std::vector<double>& out) {
  out.assign(hi >= lo ? hi - lo + 1 : 0, 0.0);
  if (out.empty()) return;
  autocorrelation_base(x.data(), x.size(), lo, hi, out.data());
}

namespace {
// w[i] = p[i] - (S[i + right + 1] - S[i - left]) * inv over whole groups of 8 from i (advanced);
// returns the sum of the w[i] as (lanes 0+4, 1+5) + (2+6, 3+7) of eight interleaved sums.
V2 highpass_interior_base(const double* p, const double* S, double* w, std::size_t& i, std::size_t last,
                          std::size_t left, std::size_t right, double inv) {
  const V2 vinv = splat(inv);
  V2 a = splat(0), b = splat(0), c = splat(0), d = splat(0);
  auto at = [&](std::size_t j) __attribute__((always_inline)) {
    const V2 v = load2(p + j) - (load2(S + j + right + 1) - load2(S + j - left)) * vinv;
    store2(w + j, v);
    return v;
  };
  for (; i + 8 <= last; i += 8) {
    a += at(i);
    b += at(i + 2);
    c += at(i + 4);
    d += at(i + 6);
  }
  return (a + c) + (b + d);
}
V2 highpass_interior(const double* p, const double* S, double* w, std::size_t& i, std::size_t last,
                     std::size_t left, std::size_t right, double inv) {
  return highpass_interior_base(p, S, w, i, last, left, right, inv);
}
}  // namespace

void centred_autocorrelation(std::span<const double> x, std::size_t width, std::size_t lo, std::size_t hi,
                             Buffer& work, std::vector<double>& out) {
  const std::size_t n = x.size();
  work.resize(n);
  const double* p = x.data();
  double* w = work.data();
  V2 s0 = splat(0), s1 = splat(0);
  if (width > 0 && n > 0) {
    // x minus its centred moving average (as subtract_moving_average, on the same prefix
    // sums), written to `work` straight from the source.
    const std::size_t left = (width - 1) / 2, right = width - 1 - left;
    Buffer prefix;
    prefix_sums(x, prefix);
    const double inv = 1.0 / static_cast<double>(width);
    const double* S = prefix.data();
    const std::size_t first = std::min(n, left), last = std::max(first, n >= right ? n - right : 0);
    auto edge = [&](std::size_t i) {
      const std::size_t a = i >= left ? i - left : 0;
      const std::size_t b = std::min(n, i + right + 1);
      w[i] = p[i] - (S[b] - S[a]) / static_cast<double>(b - a);
      s0[0] += w[i];
    };
    for (std::size_t i = 0; i < first; ++i) edge(i);
    std::size_t i = first;
    // Eight interleaved sums (i mod 8) for the mean: with two (one V2 chain) this loop waited
    // on its additions, 1.5 cycles per value (the largest part of the ACF step).
    s1 = highpass_interior(p, S, w, i, last, left, right, inv);
    const V2 vinv = splat(inv);
    for (; i + 2 <= last; i += 2) {
      const V2 v = load2(p + i) - (load2(S + i + right + 1) - load2(S + i - left)) * vinv;
      store2(w + i, v);
      s1 += v;
    }
    for (; i < last; ++i) {
      w[i] = p[i] - (S[i + right + 1] - S[i - left]) * inv;
      s0[1] += w[i];
    }
    for (i = last; i < n; ++i) edge(i);
  } else {
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
      const V2 a = load2(p + i), b = load2(p + i + 2);
      store2(w + i, a), store2(w + i + 2, b);
      s0 += a, s1 += b;
    }
    for (; i < n; ++i) s0[0] += (w[i] = p[i]);
  }
  if (n > 0) {
    add_to(w, n, -(hsum(s0 + s1) / static_cast<double>(n)));
  }
  autocorrelation(std::span<const double>(w, n), lo, hi, out);
}

double parabolic_offset(double a, double b, double c) {
  const double denom = a - 2 * b + c;
  if (!(std::abs(denom) > 1e-15)) return 0.0;
  return std::clamp(0.5 * (a - c) / denom, -0.5, 0.5);
}

}  // namespace epochcast::signal

#include "fp_contract_off_end.hpp"
