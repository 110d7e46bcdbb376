// Quantiles, block subsamples and least-squares sums of long series (declared in signal.hpp).
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

void line_sums(std::span<const double> y, double& sum, double& sum_iy) {
  const std::size_t n = y.size();
  const double* p = y.data();
  V2 s0 = splat(0), s1 = splat(0), q0 = splat(0), q1 = splat(0);
  V2 i0{0, 1}, i1{2, 3};
  const V2 four = splat(4);
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const V2 a = load2(p + i), b = load2(p + i + 2);
    s0 += a;
    s1 += b;
    q0 += a * i0;
    q1 += b * i1;
    i0 += four;
    i1 += four;
  }
  double s = hsum(s0 + s1), q = hsum(q0 + q1);
  for (; i < n; ++i) {
    s += p[i];
    q += static_cast<double>(i) * p[i];
  }
  sum = s;
  sum_iy = q;
}

namespace {
// Counts of x below lo, equal to lo, equal to hi; the values strictly between are appended to
// `kept` (m of them, in any order: only the k-th smallest of them is asked for).
void bracket_base(const double* x, std::size_t n, double lo, double hi, double* kept, std::size_t& m,
                  std::size_t& below, std::size_t& at_lo, std::size_t& at_hi) {
  for (std::size_t i = 0; i < n; ++i) {
    const double v = x[i];
    kept[m] = v;
    m += (v > lo) & (v < hi);
    below += v < lo;
    at_lo += v == lo;
    at_hi += v == hi;
  }
}
}  // namespace

namespace {
constexpr std::size_t kPivots = 256, kMargin = 20;
// The k-th smallest of x[0, n) (n >= 8 kPivots) through a pivot bracket: two pivots from a
// sample bracket rank k; one branch-free sweep counts the values below and keeps those between
// them, and `select_kept(kept, m, r)` picks the r-th of the m kept (~1/6 of them). True with
// the value in `out`, false when the bracket missed.
// Pivot sample at golden-ratio steps (mod n), not at a fixed stride: the inputs are often
// strided subsamples of periodic signals, and a second fixed stride can alias with them
// (the bracket then missed 2 of 11 medians on the 24-hour benchmark trace).
template <class SelectKept>
bool bracket_select(const double* x, std::size_t n, std::size_t k, double& out, SelectKept&& select_kept) {
  std::array<double, kPivots> piv;
  const std::size_t step = static_cast<std::size_t>(0.6180339887498949 * static_cast<double>(n)) | 1;
  for (std::size_t j = 0, at = 0; j < kPivots; ++j) {
    piv[j] = x[at];
    at += step;  // (at + step) % n without a division: step < n
    if (at >= n) at -= n;
  }
  // Only two order statistics of the pivots are needed: two selections, not a sort.
  const std::size_t at = k * (kPivots - 1) / (n - 1);
  const std::size_t r_lo = at >= kMargin ? at - kMargin : 0, r_hi = std::min(kPivots - 1, at + kMargin);
  std::nth_element(piv.begin(), piv.begin() + static_cast<std::ptrdiff_t>(r_hi), piv.end());
  std::nth_element(piv.begin(), piv.begin() + static_cast<std::ptrdiff_t>(r_lo),
                   piv.begin() + static_cast<std::ptrdiff_t>(r_hi));
  const double lo = piv[r_lo], hi = piv[r_hi];
  // Values equal to a pivot are counted, not kept: readings are often heavily tied.
  Buffer kept(n + 8);  // written before it is read (no zero fill); 8 spare for the vector stores
  std::size_t m = 0, below = 0, at_lo = 0, at_hi = 0;
  bracket_base(x, n, lo, hi, kept.data(), m, below, at_lo, at_hi);
  if (lo == hi) at_hi = 0;
  if (k < below) return false;
  std::size_t r = k - below;
  if (r < at_lo) {
    out = lo;
    return true;
  }
  r -= at_lo;
  if (r < m) {
    out = select_kept(kept.data(), m, r);
    return true;
  }
  if (r - m < at_hi) {
    out = hi;
    return true;
  }
  return false;
}

double nth_of(double* p, std::size_t m, std::size_t r) {
  std::nth_element(p, p + r, p + m);
  return p[r];
}
}  // namespace

double quantile(std::span<const double> x, double q) {
  if (x.empty()) return std::numeric_limits<double>::quiet_NaN();
  const std::size_t n = x.size();
  const auto k = static_cast<std::size_t>(std::clamp(q, 0.0, 1.0) * static_cast<double>(n - 1) + 0.5);
  if (n >= 8 * kPivots) {
    // Exact; a bracket that misses falls back to the whole copy. The r-th of the kept values is
    // nth_element's on them; when there are enough of them, a second bracket over the kept finds
    // it first (the ~1/6 of the ~1/6: nth_element over all the kept was most of a quantile).
    // Equal doubles other than zero have equal bits, so that value is nth_element's to the bit;
    // a zero (whose sign is whichever zero nth_element leaves there) or a miss takes nth_element.
    double v;
    if (bracket_select(x.data(), n, k, v, [](double* kept, std::size_t m, std::size_t r) {
          double w;
          if (m >= 8 * kPivots && bracket_select(kept, m, r, w, nth_of) && w != 0) return w;
          return nth_of(kept, m, r);
        }))
      return v;
  }
  std::vector<double> copy(x.begin(), x.end());
  std::nth_element(copy.begin(), copy.begin() + static_cast<std::ptrdiff_t>(k), copy.end());
  return copy[k];
}

double median(std::span<const double> x) { return quantile(x, 0.5); }

SampleLayout sample_layout(std::size_t n, std::size_t max_count) {
  if (n <= max_count || max_count < 2) return {1, n, n, {}};
  const std::size_t block = max_count >= 32 ? 16 : 1;
  SampleLayout l{max_count / block, block, n, {}};
  // floor(j * (n - block) / (blocks - 1)), stepped by quotient and remainder.
  const std::size_t span = n - block, den = l.blocks - 1, q = span / den, r = span % den;
  l.starts.resize(l.blocks);
  for (std::size_t j = 0, s = 0, acc = 0; j < l.blocks; ++j) {
    l.starts[j] = s;
    s += q;
    acc += r;
    if (acc >= den) acc -= den, ++s;
  }
  return l;
}

void gather(std::span<const double> x, const SampleLayout& layout, std::vector<double>& out) {
  out.resize(layout.size());
  if (layout.blocks == 1) {
    std::copy_n(x.begin(), layout.block, out.begin());
    return;
  }
  const double* p = x.data();
  double* o = out.data();
  // Each block is two or three lines the hardware does not guess: fetched 8 blocks ahead.
  constexpr std::size_t kAhead = 8;
  for (std::size_t j = 0; j < layout.blocks; ++j, o += layout.block) {
    if (j + kAhead < layout.blocks) {
      const double* a = p + layout.start(j + kAhead);
      __builtin_prefetch(a);
      __builtin_prefetch(a + layout.block - 1);
    }
    if (layout.block == 16) {
      std::memcpy(o, p + layout.start(j), 16 * sizeof(double));  // inline moves, not a call per block
    } else {
      std::copy_n(p + layout.start(j), layout.block, o);
    }
  }
}

void block_line_sums(std::span<const double> sample, const SampleLayout& layout, double im, double& sy, double& sxy,
                     double& sxx) {
  const auto bl = static_cast<double>(layout.block), tm = 0.5 * (bl - 1);
  const double* p = sample.data();
  std::size_t j = 0, k = 0;
  if (layout.block == 16) {
    // The partial sums in registers (as an array indexed by t % 4 they went through memory, a
    // store-to-load wait per value), lanes {0, 1} and {2, 3} in two-wide vectors; the indices,
    // a chain of 16 adds per block, for four blocks side by side, one chain per block as before.
    V2 sy01{0, 0}, sy23{0, 0}, sxy01{0, 0}, sxy23{0, 0};
    for (; j + 4 <= layout.blocks; j += 4) {
      std::array<double, 4> d;
      std::array<std::array<double, 16>, 4> xs;
      for (std::size_t b = 0; b < 4; ++b) {
        d[b] = static_cast<double>(layout.start(j + b)) + tm - im;
        sxx += bl * d[b] * d[b];
      }
      double x0 = d[0] - tm, x1 = d[1] - tm, x2 = d[2] - tm, x3 = d[3] - tm;
      for (std::size_t t = 0; t < 16; ++t) {
        xs[0][t] = x0, xs[1][t] = x1, xs[2][t] = x2, xs[3][t] = x3;
        x0 += 1, x1 += 1, x2 += 1, x3 += 1;
      }
      for (std::size_t b = 0; b < 4; ++b)
        for (std::size_t t = 0; t < 16; t += 4, k += 4) {
          const V2 v01 = load2(p + k), v23 = load2(p + k + 2);
          sy01 += v01;
          sy23 += v23;
          sxy01 += load2(&xs[b][t]) * v01;
          sxy23 += load2(&xs[b][t + 2]) * v23;
        }
    }
    std::array<double, 4> sy4{sy01[0], sy01[1], sy23[0], sy23[1]}, sxy4{sxy01[0], sxy01[1], sxy23[0], sxy23[1]};
    for (; j < layout.blocks; ++j) {
      const double d = static_cast<double>(layout.start(j)) + tm - im;
      sxx += bl * d * d;
      double x = d - tm;
      for (std::size_t t = 0; t < layout.block; ++t, ++k, x += 1) {
        sy4[t % 4] += p[k];
        sxy4[t % 4] += x * p[k];
      }
    }
    sy = (sy4[0] + sy4[1]) + (sy4[2] + sy4[3]), sxy = (sxy4[0] + sxy4[1]) + (sxy4[2] + sxy4[3]);
    return;
  }
  std::array<double, 4> sy4{}, sxy4{};  // independent sums: one chain waits on its adds
  for (; j < layout.blocks; ++j) {
    const double d = static_cast<double>(layout.start(j)) + tm - im;
    sxx += bl * d * d;
    double x = d - tm;
    for (std::size_t t = 0; t < layout.block; ++t, ++k, x += 1) {
      sy4[t % 4] += p[k];
      sxy4[t % 4] += x * p[k];
    }
  }
  sy = (sy4[0] + sy4[1]) + (sy4[2] + sy4[3]), sxy = (sxy4[0] + sxy4[1]) + (sxy4[2] + sxy4[3]);
}

void subtract_line(std::span<double> x, const SampleLayout& layout, double intercept, double slope) {
  const V2 vi = splat(intercept), vs = splat(slope), two = splat(2);
  double* o = x.data();
  // Indices through signed integers: exact below 2^53, and an unsigned 64-bit conversion is a
  // branch per value on x86-64.
  for (std::size_t j = 0, k = 0; j < layout.blocks; ++j) {
    const auto s0 = static_cast<double>(static_cast<std::int64_t>(layout.start(j)));
    std::size_t t = 0;
    V2 idx{s0, s0 + 1};  // s0 + t exactly (integers)
    for (; t + 2 <= layout.block; t += 2, k += 2, idx += two) store2(o + k, load2(o + k) - (vi + vs * idx));
    for (; t < layout.block; ++t, ++k) o[k] -= intercept + slope * (s0 + static_cast<double>(t));
  }
}

void abs_deviation(std::span<double> x, double m) {
  const V2 vm = splat(m);
  double* o = x.data();
  const std::size_t n = x.size();
  std::size_t i = 0;
  using U2 = std::uint64_t __attribute__((vector_size(16)));
  const U2 magnitude{~(std::uint64_t{1} << 63), ~(std::uint64_t{1} << 63)};
  for (; i + 2 <= n; i += 2) {
    const V2 d = load2(o + i) - vm;
    store2(o + i, reinterpret_cast<V2>(reinterpret_cast<U2>(d) & magnitude));  // sign bit cleared, as fabs
  }
  for (; i < n; ++i) o[i] = std::abs(o[i] - m);
}

double quantile_sampled(std::span<const double> x, double q, std::size_t max_count) {
  if (x.size() <= max_count) return quantile(x, q);
  std::vector<double> sample;
  gather(x, sample_layout(x.size(), max_count), sample);
  return quantile(sample, q);
}

}  // namespace epochcast::signal

#include "fp_contract_off_end.hpp"
