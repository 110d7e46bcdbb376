#include "signal.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>

// No contraction of a * b + c into a fused multiply-add anywhere in this file: it rounds once
// where the plain expression rounds twice, and the results (and the tests' exact expectations)
// must not depend on the target's FMA (arm64 has one; baseline x86-64 does not).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace epochcast::signal {
namespace {

// Two doubles per operation (GCC/Clang vector extension: SSE2 on x86-64, NEON on arm64, plain
// scalar code elsewhere). The hot loops are memory-bound sweeps over 10^6-sample channels;
// the default -O2 build does not vectorise them by itself, and reductions never are (their
// order would change), so the partial sums are spelled out.
using V2 = double __attribute__((vector_size(16)));

inline V2 load2(const double* p) {
  V2 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store2(double* p, V2 v) { std::memcpy(p, &v, sizeof v); }
inline V2 splat(double v) { return V2{v, v}; }
inline double hsum(V2 v) { return v[0] + v[1]; }
// (a0 + a1) / 2, (b0 + b1) / 2: pairwise means of four consecutive values.
inline V2 pair_sums(V2 a, V2 b) {
  return __builtin_shufflevector(a, b, 0, 2) + __builtin_shufflevector(a, b, 1, 3);
}
inline V2 pair_means(V2 a, V2 b) {
  return (__builtin_shufflevector(a, b, 0, 2) + __builtin_shufflevector(a, b, 1, 3)) * splat(0.5);
}

}  // namespace

namespace {
// Whether every p[i] is in [lo, hi] (NaN is not): running min and max, and a probe that turns
// NaN on a NaN reading (v - v).
bool all_inside_base(const double* p, std::size_t n, double lo, double hi) {
  V2 vmin = splat(std::numeric_limits<double>::infinity()), vmax = -vmin, probe = splat(0);
  std::size_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const V2 v = load2(p + i);
    vmin = v < vmin ? v : vmin;
    vmax = v > vmax ? v : vmax;
    probe += v - v;
  }
  bool clean = vmin[0] >= lo && vmin[1] >= lo && vmax[0] <= hi && vmax[1] <= hi && !(probe[0] != probe[0]) &&
               !(probe[1] != probe[1]);
  for (; i < n; ++i) clean = clean && p[i] >= lo && p[i] <= hi;
  return clean;
}

}  // namespace

std::size_t count_outside(std::span<const double> x, double lo, double hi) {
  const std::size_t n = x.size();
  const double* p = x.data();
  // Fast: the range check alone; the exact count only when something is outside.
  const bool clean = all_inside_base(p, n, lo, hi);
  if (clean) return 0;
  std::size_t ok = 0;
  for (std::size_t i = 0; i < n; ++i) ok += p[i] >= lo && p[i] <= hi;
  return n - ok;
}

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
// One z-score pyramid sweep over whole 16-sample blocks [b, e) with one store mask (bit l:
// level l stored there). Level index k of level l is written at o[l][k - of[l]].
struct PyramidSweep {
  const double* p;
  std::array<double*, 4> o;
  std::array<std::size_t, 4> of;
  double* o4;  // level 4 (whole) or null
  std::size_t first;
  double base, slope, inv, clip;
  // Readings checked by their running min and max (NaN is lost there, but it survives the
  // clip and the pairwise sums into `probe`); counted exactly by the caller only when bad.
  double vmin = std::numeric_limits<double>::infinity(), vmax = -std::numeric_limits<double>::infinity(), probe = 0;
  // Level 5 from each pair of level-4 values as they are made, (left + right) * 0.5 as halve()
  // makes it: the sweep waits on memory, and halving level 4 afterwards was another pass.
  // (A cascade to every coarser level here branched unpredictably and cost more than it saved.)
  double* o5 = nullptr;
  double left = 0;
  void level4(std::size_t k, double v) {
    o4[k] = v;
    if (!o5) return;
    if (k & 1) o5[k >> 1] = (left + v) * 0.5;  // k alternates: predicted
    left = v;
  }
};

void pyramid_blocks_base(PyramidSweep& s, std::size_t b, std::size_t e, unsigned mask) {
  const double* p = s.p;
  const auto o = s.o;
  const auto out_first = s.of;
  double* o4 = s.o4;
  const V2 vbase = splat(s.base), vslope = splat(s.slope), vinv = splat(s.inv), hi = splat(s.clip), lo = splat(-s.clip);
  const V2 two = splat(2);
  V2 vmin = splat(std::numeric_limits<double>::infinity()), vmax = -vmin, nan_probe = splat(0);
  const auto f = static_cast<double>(s.first + b * 16);
  V2 idx{f, f + 1};
  auto z = [&](const double* q) __attribute__((always_inline)) {
    const V2 v = load2(q);
    vmin = v < vmin ? v : vmin;
    vmax = v > vmax ? v : vmax;
    V2 r = (v - vbase - vslope * idx) * vinv;
    idx += two;
    r = hi < r ? hi : r;  // minpd / maxpd, operands in the order that keeps a NaN
    r = lo > r ? lo : r;
    return r;
  };
  // Pairwise sums, scaled to means only where stored: sum/2^l is exactly the mean of means
  // (halving is exact), and most blocks store nothing. Four samples -> levels 0 and 1.
  auto quad = [&](const double* q, std::size_t i) __attribute__((always_inline)) {
    const V2 a0 = z(q), a1 = z(q + 2);
    if (mask & 1u) store2(o[0] + (i - out_first[0]), a0), store2(o[0] + (i + 2 - out_first[0]), a1);
    const V2 m = pair_sums(a0, a1);
    if (mask & 2u) store2(o[1] + (i / 2 - out_first[1]), m * splat(0.5));
    return m;
  };
  for (std::size_t k = b; k < e; ++k) {
    const std::size_t i = k * 16;
    const double* q = p + i;
    // 8 KiB ahead: the sweep computes more per byte than a plain read, and the hardware
    // prefetcher alone left it waiting on memory (measured: 6.0 -> 5.4 ms, 6 x 864,000 cold).
    __builtin_prefetch(q + 1024);
    __builtin_prefetch(q + 1032);
    const V2 b0 = quad(q, i), b1 = quad(q + 4, i + 4);
    const V2 c0 = pair_sums(b0, b1);
    const V2 b2 = quad(q + 8, i + 8), b3 = quad(q + 12, i + 12);
    const V2 c1 = pair_sums(b2, b3);
    if (mask & 4u)
      store2(o[2] + (i / 4 - out_first[2]), c0 * splat(0.25)), store2(o[2] + (i / 4 + 2 - out_first[2]), c1 * splat(0.25));
    const V2 d0 = pair_sums(c0, c1);
    if (mask & 8u) store2(o[3] + (i / 8 - out_first[3]), d0 * splat(0.125));
    nan_probe += d0;
    if (o4) s.level4(k, (d0[0] + d0[1]) * 0.0625);
  }
  s.vmin = std::min({s.vmin, vmin[0], vmin[1]});
  s.vmax = std::max({s.vmax, vmax[0], vmax[1]});
  s.probe += nan_probe[0] + nan_probe[1];
}

}  // namespace

std::size_t affine_clip_pyramid(std::span<const double> y, std::size_t first, double base, double slope, double inv,
                                double clip, double valid_lo, double valid_hi, const PyramidStore& want,
                                std::array<Buffer, 4>& out, std::array<std::size_t, 4>& out_first, Buffer* level4,
                                Buffer* level5) {
  const std::size_t n = y.size();
  const std::size_t blocks = n / 16;  // whole 16-sample blocks: 16, 8, 4, 2, 1 values of levels 0..4
  // Per level, the blocks whose values are stored (the wanted range rounded out to blocks) and
  // the stored index range; the last < 16 samples (the tail) are stored when the range reaches them.
  std::array<std::size_t, 4> block_lo{}, block_hi{}, last{};
  for (std::size_t l = 0; l < 4; ++l) {
    const std::size_t len = n >> l;
    const std::size_t lo = std::min(want[l].first, len), hi = std::min(std::max(want[l].second, lo), len);
    if (lo == hi) {
      block_lo[l] = block_hi[l] = 0;
      out_first[l] = last[l] = 0;
    } else {
      block_lo[l] = (lo << l) / 16;
      block_hi[l] = std::min(blocks, ((hi << l) + 15) / 16);
      out_first[l] = (block_lo[l] * 16) >> l;
      last[l] = hi > ((blocks * 16) >> l) ? len : (block_hi[l] * 16) >> l;
    }
    out[l].resize(last[l] - out_first[l]);
  }
  if (level4) level4->resize(blocks);
  const double* p = y.data();
  std::array<double*, 4> o{};
  for (std::size_t l = 0; l < 4; ++l) o[l] = out[l].data();  // level index k is at o[l][k - out_first[l]]
  PyramidSweep sweep_state{p, o, out_first, level4 ? level4->data() : nullptr, first, base, slope, inv, clip};
  if (level4 && level5) {
    level5->resize(blocks / 2);  // halve() drops an odd last value, and so does the pairing
    sweep_state.o5 = level5->data();
  }
  auto sweep = [&](std::size_t b, std::size_t e, unsigned mask) { pyramid_blocks_base(sweep_state, b, e, mask); };
  // Segments between the store ranges' block bounds, each swept with its own mask.
  std::array<std::size_t, 10> cuts{0, blocks};
  std::size_t ncut = 2;
  for (std::size_t l = 0; l < 4; ++l) cuts[ncut++] = block_lo[l], cuts[ncut++] = block_hi[l];
  std::sort(cuts.begin(), cuts.begin() + static_cast<std::ptrdiff_t>(ncut));
  for (std::size_t s = 0; s + 1 < ncut; ++s) {
    const std::size_t b = cuts[s], e = cuts[s + 1];
    if (b >= e) continue;
    unsigned mask = 0;
    for (std::size_t l = 0; l < 4; ++l)
      if (block_lo[l] <= b && e <= block_hi[l]) mask |= 1u << l;
    sweep(b, e, mask);
  }
  const bool clean =
      sweep_state.vmin >= valid_lo && sweep_state.vmax <= valid_hi && sweep_state.probe == sweep_state.probe;
  std::size_t ok = clean ? blocks * 16 : blocks * 16 - count_outside(y.first(blocks * 16), valid_lo, valid_hi);
  // The tail: level values from its samples, stored where the ranges reach them.
  const std::size_t t0 = blocks * 16;
  std::array<std::array<double, 16>, 4> tail{};
  for (std::size_t i = t0; i < n; ++i) {
    ok += p[i] >= valid_lo && p[i] <= valid_hi;
    const double v = (p[i] - base - slope * static_cast<double>(first + i)) * inv;
    tail[0][i - t0] = v > clip ? clip : (v < -clip ? -clip : v);
  }
  for (std::size_t l = 0; l < 4; ++l) {
    const std::size_t from = t0 >> l, len = n >> l;
    if (l > 0)
      for (std::size_t k = from; k < len; ++k)
        tail[l][k - from] = 0.5 * (tail[l - 1][2 * k - (t0 >> (l - 1))] + tail[l - 1][2 * k + 1 - (t0 >> (l - 1))]);
    if (last[l] == len)
      for (std::size_t k = std::max(from, out_first[l]); k < len; ++k) o[l][k - out_first[l]] = tail[l][k - from];
  }
  return n - ok;
}

std::size_t affine_clip_pyramid(std::span<const double> y, double base, double slope, double inv, double clip,
                                double valid_lo, double valid_hi, std::array<Buffer, 4>& out) {
  const std::size_t all = y.size();
  std::array<std::size_t, 4> first{};
  return affine_clip_pyramid(y, 0, base, slope, inv, clip, valid_lo, valid_hi, {{{0, all}, {0, all}, {0, all}, {0, all}}},
                             out, first, nullptr);
}

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

namespace {
void halve_base(const double* p, double* o, std::size_t m) {
  std::size_t k = 0;
  for (; k + 2 <= m; k += 2) store2(o + k, pair_means(load2(p + 2 * k), load2(p + 2 * k + 2)));
  for (; k < m; ++k) o[k] = 0.5 * (p[2 * k] + p[2 * k + 1]);
}

// x[i] += c over [0, n) (x - m is x + (-m) exactly).
void add_to_base(double* x, std::size_t n, double c) {
  std::size_t i = 0;
  for (; i + 2 <= n; i += 2) store2(x + i, load2(x + i) + splat(c));
  for (; i < n; ++i) x[i] += c;
}
void add_to(double* x, std::size_t n, double c) {
  add_to_base(x, n, c);
}
}  // namespace

Buffer halve(std::span<const double> x) {
  const std::size_t m = x.size() / 2;
  Buffer out(m);
  halve_base(x.data(), out.data(), m);
  return out;
}

void subtract_moving_average(std::span<double> x, std::size_t width) {
  const std::size_t n = x.size();
  if (n == 0) return;
  width = std::max<std::size_t>(1, width);
  const std::size_t left = (width - 1) / 2;
  const std::size_t right = width - 1 - left;
  // Prefix sums as four interleaved chains over four quarters (one chain is bound by the
  // latency of its additions), then each quarter shifted by the totals before it.
  Buffer prefix(n + 1);
  prefix[0] = 0;
  double* P = prefix.data() + 1;
  const double* p = x.data();
  const std::size_t q = n / 4;
  double c0 = 0, c1 = 0, c2 = 0, c3 = 0;
  for (std::size_t i = 0; i < q; ++i) {
    c0 += p[i];
    c1 += p[q + i];
    c2 += p[2 * q + i];
    c3 += p[3 * q + i];
    P[i] = c0;
    P[q + i] = c1;
    P[2 * q + i] = c2;
    P[3 * q + i] = c3;
  }
  for (std::size_t i = 4 * q; i < n; ++i) {
    c3 += p[i];
    P[i] = c3;
  }
  const double o1 = c0, o2 = o1 + c1, o3 = o2 + c2;
  for (std::size_t i = q; i < 2 * q; ++i) P[i] += o1;
  for (std::size_t i = 2 * q; i < 3 * q; ++i) P[i] += o2;
  for (std::size_t i = 3 * q; i < n; ++i) P[i] += o3;
  const double inv = 1.0 / static_cast<double>(width);
  const double* S = prefix.data();
  double* o = x.data();
  // Interior (the whole window inside): no branches.
  const std::size_t first = std::min(n, left), last = n >= right ? n - right : 0;
  for (std::size_t i = first; i < last; ++i) o[i] -= (S[i + right + 1] - S[i - left]) * inv;
  auto edge = [&](std::size_t i) {
    const std::size_t a = i >= left ? i - left : 0;
    const std::size_t b = std::min(n, i + right + 1);
    o[i] -= (S[b] - S[a]) / static_cast<double>(b - a);
  };
  for (std::size_t i = 0; i < first; ++i) edge(i);
  for (std::size_t i = std::max(first, last); i < n; ++i) edge(i);
}

void add_scalar(std::span<double> x, double v) {
  for (double& e : x) e += v;
}

namespace {
// Over t[1, n): the smallest step t[i] - t[i-1], the range of t[i] - i * dt, and a probe that
// turns NaN on any non-finite t (t - t); returns the first index not swept.
struct TimeSweep {
  double step, dmin, dmax, probe;
};
std::size_t time_sweep_base(const double* p, std::size_t n, double dt, TimeSweep& r) {
  const V2 vdt = splat(dt), two = splat(2);
  V2 step = splat(std::numeric_limits<double>::infinity()), dmin = step, dmax = -step, probe = splat(0);
  V2 idx{1, 2};
  std::size_t i = 1;
  for (; i + 2 <= n; i += 2) {
    const V2 cur = load2(p + i), prev = load2(p + i - 1);
    const V2 s = cur - prev, d = cur - idx * vdt;
    step = s < step ? s : step;
    dmin = d < dmin ? d : dmin;
    dmax = d > dmax ? d : dmax;
    probe += cur - cur;
    idx += two;
  }
  // A NaN step or offset is lost by min/max; the probe catches its t.
  r = {std::min(step[0], step[1]), std::min(dmin[0], dmin[1]), std::max(dmax[0], dmax[1]), probe[0] + probe[1]};
  return i;
}
}  // namespace

std::size_t check_timestamps(std::span<const double> t, double dt, double tolerance, bool& on_grid) {
  const std::size_t n = t.size();
  const double* p = t.data();
  // One sweep of min/max: the smallest step (increasing), the grid offsets' range, and a
  // NaN probe. The exact index only on failure.
  TimeSweep r{};
  std::size_t i = time_sweep_base(p, n, dt, r);
  bool all = r.step >= 0 && r.probe == 0 && (n == 0 || std::isfinite(p[0]));
  bool g = r.dmin >= -tolerance && r.dmax <= tolerance && (n == 0 || std::abs(p[0]) <= tolerance);
  for (; i < n; ++i) {
    all = all && std::isfinite(p[i]) && p[i] >= p[i - 1];
    g = g && std::abs(p[i] - static_cast<double>(i) * dt) <= tolerance;
  }
  on_grid = all && g;
  if (all) return n;
  for (std::size_t k = 0; k < n; ++k)
    if (!std::isfinite(p[k]) || (k > 0 && p[k] < p[k - 1])) return k;
  return n;
}

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
    // x minus its centred moving average (as subtract_moving_average), written to `work`
    // straight from the source; prefix sums as four interleaved chains over four quarters.
    const std::size_t left = (width - 1) / 2, right = width - 1 - left;
    Buffer prefix(n + 1);
    prefix[0] = 0;
    double* P = prefix.data() + 1;
    const std::size_t q = n / 4;
    double c0 = 0, c1 = 0, c2 = 0, c3 = 0;
    for (std::size_t i = 0; i < q; ++i) {
      c0 += p[i];
      c1 += p[q + i];
      c2 += p[2 * q + i];
      c3 += p[3 * q + i];
      P[i] = c0;
      P[q + i] = c1;
      P[2 * q + i] = c2;
      P[3 * q + i] = c3;
    }
    for (std::size_t i = 4 * q; i < n; ++i) {
      c3 += p[i];
      P[i] = c3;
    }
    const double o1 = c0, o2 = o1 + c1, o3 = o2 + c2;
    // Each quarter shifted by the totals before it (two at a time: the scalar loops were 1/6
    // of this function).
    auto shift = [P](std::size_t from, std::size_t to, double o) { add_to(P + from, to - from, o); };
    shift(q, 2 * q, o1);
    shift(2 * q, 3 * q, o2);
    shift(3 * q, n, o3);
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

namespace {
// Running range check of the busy sweep (see all_inside_base): min, max, NaN probe.
struct RangeCheck {
  double vmin = std::numeric_limits<double>::infinity(), vmax = -std::numeric_limits<double>::infinity(), probe = 0;
  void add(double v) {
    vmin = std::min(vmin, v);
    vmax = std::max(vmax, v);
    probe += v - v;
  }
  [[nodiscard]] bool inside(double lo, double hi) const { return vmin >= lo && vmax <= hi && probe == probe; }
};

// Interior busy bits, 64 to a word: bit i set when (p[i-1] + p[i]) + p[i+1] >= cut, 0 < i < n-1.
// With kCheck, every interior p[i] also goes into `rc`.
template <bool kCheck>
void busy_bits_base(const double* p, std::size_t n, double cut, std::uint64_t* bits, std::size_t words, RangeCheck& rc) {
#if defined(__SSE2__)
  V2 vmin = splat(rc.vmin), vmax = splat(rc.vmax), probe = splat(0);
#endif
  for (std::size_t w = 0; w < words; ++w) {
    const std::size_t lo = std::max<std::size_t>(1, w * 64), hi = std::min(n - 1, w * 64 + 64);
    std::uint64_t word = 0;
    std::size_t i = lo;
    auto one = [&](std::size_t j) {
      if constexpr (kCheck) rc.add(p[j]);
      word |= static_cast<std::uint64_t>((p[j - 1] + p[j]) + p[j + 1] >= cut) << (j % 64);
    };
#if defined(__SSE2__)
    // Two samples per compare, their bits taken with movmskpd (same sums, same order).
    if (i % 2 != 0 && i < hi) one(i++);
    const V2 vcut = splat(cut);
    for (; i + 2 <= hi; i += 2) {
      const V2 mid = load2(p + i);
      if constexpr (kCheck) {
        vmin = mid < vmin ? mid : vmin;
        vmax = mid > vmax ? mid : vmax;
        probe += mid - mid;
      }
      const V2 sum3 = (load2(p + i - 1) + mid) + load2(p + i + 1);
      const auto mask = static_cast<unsigned>(__builtin_ia32_movmskpd(sum3 >= vcut ? splat(-1.0) : splat(0.0)));
      word |= static_cast<std::uint64_t>(mask) << (i % 64);
    }
#endif
    for (; i < hi; ++i) one(i);
    bits[w] = word;
  }
#if defined(__SSE2__)
  if constexpr (kCheck)
    for (int j = 0; j < 2; ++j) rc.vmin = std::min(rc.vmin, vmin[j]), rc.vmax = std::max(rc.vmax, vmax[j]), rc.probe += probe[j];
#endif
}
}  // namespace

namespace {
std::vector<std::pair<std::size_t, std::size_t>> runs_above_impl(std::span<const double> a, double threshold,
                                                                 RangeCheck* check) {
  const std::size_t n = a.size();
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  if (n == 0) return runs;
  RangeCheck unused;
  RangeCheck& rc = check ? *check : unused;
  // Busy bits, 64 to a word. The interior test (a[i-1] + a[i] + a[i+1]) / 3 > threshold is
  // made without the division: x / 3 rounds monotonically in x, so it holds exactly for
  // x >= cut, the smallest double for which it holds.
  std::vector<std::uint64_t> bits((n + 63) / 64, 0);
  auto set = [&](std::size_t i, bool v) { bits[i / 64] |= static_cast<std::uint64_t>(v) << (i % 64); };
  double cut = 3.0 * threshold;
  const bool exact_cut = std::isfinite(threshold) && std::isfinite(cut);
  if (exact_cut) {
    while (cut / 3.0 > threshold) cut = std::nextafter(cut, -std::numeric_limits<double>::infinity());
    while (!(cut / 3.0 > threshold)) cut = std::nextafter(cut, std::numeric_limits<double>::infinity());
  }
  const double* p = a.data();
  if (exact_cut) {
    auto sweep = [&]<bool kCheck>() {
      busy_bits_base<kCheck>(p, n, cut, bits.data(), bits.size(), rc);
    };
    if (check) {
      sweep.template operator()<true>();
    } else {
      sweep.template operator()<false>();
    }
  } else {
    for (std::size_t i = 1; i + 1 < n; ++i) set(i, (p[i - 1] + p[i] + p[i + 1]) / 3.0 > threshold);
    if (check)
      for (std::size_t i = 1; i + 1 < n; ++i) rc.add(p[i]);
  }
  if (check) {
    rc.add(p[0]);
    rc.add(p[n - 1]);
  }
  if (n >= 2) {
    set(0, (p[0] + p[1]) / 2.0 > threshold);
    set(n - 1, (p[n - 2] + p[n - 1]) / 2.0 > threshold);
  } else {
    set(0, p[0] > threshold);
  }
  // First index >= from whose bit is `value` (n if none): whole words skipped at a time.
  auto next = [&](std::size_t from, bool value) {
    const std::uint64_t flip = value ? 0 : ~std::uint64_t{0};
    std::size_t w = from / 64;
    if (w >= bits.size()) return n;
    std::uint64_t x = (bits[w] ^ flip) & (~std::uint64_t{0} << (from % 64));
    while (x == 0) {
      if (++w >= bits.size()) return n;
      x = bits[w] ^ flip;
    }
    return std::min(n, w * 64 + static_cast<std::size_t>(__builtin_ctzll(x)));
  };
  for (std::size_t i = next(0, true); i < n;) {
    const std::size_t e = next(i, false);
    runs.emplace_back(i, e);
    i = next(e, true);
  }
  return runs;
}
}  // namespace

std::vector<std::pair<std::size_t, std::size_t>> runs_above(std::span<const double> a, double threshold) {
  return runs_above_impl(a, threshold, nullptr);
}

std::vector<std::pair<std::size_t, std::size_t>> runs_above(std::span<const double> a, double threshold, double lo,
                                                            double hi, bool& inside) {
  RangeCheck rc;
  auto runs = runs_above_impl(a, threshold, &rc);
  inside = rc.inside(lo, hi);
  return runs;
}

double smallest_step(std::span<const double> readings, std::size_t max_count) {
  // Order-preserving keys: sign bit flipped for positive doubles, all bits for negative ones
  // (-0 sorts before +0; both compare equal, and the differences to their neighbours are the
  // same either way).
  std::vector<std::uint64_t> key, tmp;
  key.reserve(std::min(readings.size(), max_count));
  for (std::size_t i = 0; i < readings.size() && key.size() < max_count; ++i) {
    if (!std::isfinite(readings[i])) continue;
    std::uint64_t u;
    std::memcpy(&u, &readings[i], sizeof u);
    key.push_back(u >> 63 ? ~u : u | (std::uint64_t{1} << 63));
  }
  const std::size_t n = key.size();
  if (n < 2) return 0;
  // LSD radix sort, one byte per pass; a byte that all keys share needs no pass.
  std::vector<std::array<std::uint32_t, 256>> count(8);
  for (auto& c : count) c.fill(0);
  for (const std::uint64_t k : key)
    for (int b = 0; b < 8; ++b) ++count[static_cast<std::size_t>(b)][(k >> (8 * b)) & 0xff];
  tmp.resize(n);
  for (int b = 0; b < 8; ++b) {
    auto& c = count[static_cast<std::size_t>(b)];
    if (c[(key[0] >> (8 * b)) & 0xff] == n) continue;
    std::uint32_t sum = 0;
    for (auto& v : c) {
      const std::uint32_t here = v;
      v = sum;
      sum += here;
    }
    for (const std::uint64_t k : key) tmp[c[(k >> (8 * b)) & 0xff]++] = k;
    key.swap(tmp);
  }
  auto value = [](std::uint64_t k) {
    const std::uint64_t u = k >> 63 ? k & ~(std::uint64_t{1} << 63) : ~k;
    double v;
    std::memcpy(&v, &u, sizeof v);
    return v;
  };
  double step = 0, prev = value(key[0]);
  for (std::size_t i = 1; i < n; ++i) {
    const double cur = value(key[i]);
    const double d = cur - prev;
    if (d > 1e-9 * (std::abs(cur) + 1) && (step == 0 || d < step)) step = d;
    prev = cur;
  }
  return step;
}

double parabolic_offset(double a, double b, double c) {
  const double denom = a - 2 * b + c;
  if (!(std::abs(denom) > 1e-15)) return 0.0;
  return std::clamp(0.5 * (a - c) / denom, -0.5, 0.5);
}

}  // namespace epochcast::signal
