#include "signal.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

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

std::size_t count_outside(std::span<const double> x, double lo, double hi) {
  const std::size_t n = x.size();
  const double* p = x.data();
  // Fast: running min and max, and a probe that turns NaN on a NaN reading (v - v); the
  // exact count only when something is outside.
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
  if (clean) return 0;
  std::size_t ok = 0;
  for (i = 0; i < n; ++i) ok += p[i] >= lo && p[i] <= hi;
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

std::size_t affine_clip_pyramid(std::span<const double> y, std::size_t first, double base, double slope, double inv,
                                double clip, double valid_lo, double valid_hi, const PyramidStore& want,
                                std::array<Buffer, 4>& out, std::array<std::size_t, 4>& out_first, Buffer* level4) {
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
  double* o4 = level4 ? level4->data() : nullptr;
  const V2 vbase = splat(base), vslope = splat(slope), vinv = splat(inv), hi = splat(clip), lo = splat(-clip);
  const V2 two = splat(2);
  // Readings checked by their running min and max (NaN is lost there, but it survives the
  // clip below and the pairwise means into `nan_probe`); counted exactly only when bad.
  V2 vmin = splat(std::numeric_limits<double>::infinity()), vmax = -vmin, nan_probe = splat(0);
  // Blocks [b, e) with one store mask (bit l: level l stored there).
  auto sweep = [&](std::size_t b, std::size_t e, unsigned mask) __attribute__((always_inline)) {
    const auto f = static_cast<double>(first + b * 16);
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
      if (o4) o4[k] = (d0[0] + d0[1]) * 0.0625;
    }
  };
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
  const bool clean = vmin[0] >= valid_lo && vmin[1] >= valid_lo && vmax[0] <= valid_hi && vmax[1] <= valid_hi &&
                     nan_probe[0] == nan_probe[0] && nan_probe[1] == nan_probe[1];
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

double quantile(std::span<const double> x, double q) {
  if (x.empty()) return std::numeric_limits<double>::quiet_NaN();
  const std::size_t n = x.size();
  const auto k = static_cast<std::size_t>(std::clamp(q, 0.0, 1.0) * static_cast<double>(n - 1) + 0.5);
  constexpr std::size_t kPivots = 256, kMargin = 20;
  if (n >= 8 * kPivots) {
    // Two pivots from a sorted sample bracket rank k; one branch-free sweep counts the
    // values below and keeps those between them, and the k-th value is selected among the
    // kept (~1/6 of them). Exact; a bracket that misses falls back to the whole copy.
    // Pivot sample at golden-ratio steps (mod n), not at a fixed stride: the inputs are often
    // strided subsamples of periodic signals, and a second fixed stride can alias with them
    // (the bracket then missed 2 of 11 medians on the 24-hour benchmark trace).
    std::array<double, kPivots> piv;
    const std::size_t step = static_cast<std::size_t>(0.6180339887498949 * static_cast<double>(n)) | 1;
    for (std::size_t j = 0, at = 0; j < kPivots; ++j, at = (at + step) % n) piv[j] = x[at];
    std::sort(piv.begin(), piv.end());
    const std::size_t at = k * (kPivots - 1) / (n - 1);
    const double lo = piv[at >= kMargin ? at - kMargin : 0], hi = piv[std::min(kPivots - 1, at + kMargin)];
    // Values equal to a pivot are counted, not kept: readings are often heavily tied.
    std::vector<double> kept(n);
    std::size_t m = 0, below = 0, at_lo = 0, at_hi = 0;
    for (const double v : x) {
      kept[m] = v;
      m += (v > lo) & (v < hi);
      below += v < lo;
      at_lo += v == lo;
      at_hi += v == hi;
    }
    if (lo == hi) at_hi = 0;
    if (k >= below) {
      std::size_t r = k - below;
      if (r < at_lo) return lo;
      r -= at_lo;
      if (r < m) {
        const auto it = kept.begin() + static_cast<std::ptrdiff_t>(r);
        std::nth_element(kept.begin(), it, kept.begin() + static_cast<std::ptrdiff_t>(m));
        return *it;
      }
      if (r - m < at_hi) return hi;
    }
  }
  std::vector<double> copy(x.begin(), x.end());
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

Buffer halve(std::span<const double> x) {
  const std::size_t m = x.size() / 2;
  Buffer out(m);
  const double* p = x.data();
  double* o = out.data();
  std::size_t k = 0;
  for (; k + 2 <= m; k += 2) store2(o + k, pair_means(load2(p + 2 * k), load2(p + 2 * k + 2)));
  for (; k < m; ++k) o[k] = 0.5 * (p[2 * k] + p[2 * k + 1]);
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

double sum(std::span<const double> x) {
  const std::size_t n = x.size();
  const double* p = x.data();
  V2 s0 = splat(0), s1 = splat(0);
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += load2(p + i);
    s1 += load2(p + i + 2);
  }
  double s = hsum(s0 + s1);
  for (; i < n; ++i) s += p[i];
  return s;
}

void add_scalar(std::span<double> x, double v) {
  for (double& e : x) e += v;
}

std::size_t check_timestamps(std::span<const double> t, double dt, double tolerance, bool& on_grid) {
  const std::size_t n = t.size();
  const double* p = t.data();
  // One sweep of min/max: the smallest step (increasing), the grid offsets' range, and a
  // probe that turns NaN on any non-finite t (t - t). The exact index only on failure.
  const V2 zero = splat(0), vdt = splat(dt), two = splat(2);
  V2 step = splat(std::numeric_limits<double>::infinity()), dmin = step, dmax = -step, probe = zero;
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
  bool all = step[0] >= 0 && step[1] >= 0 && probe[0] == 0 && probe[1] == 0 && (n == 0 || std::isfinite(p[0]));
  bool g = dmin[0] >= -tolerance && dmin[1] >= -tolerance && dmax[0] <= tolerance && dmax[1] <= tolerance &&
           (n == 0 || std::abs(p[0]) <= tolerance);
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

void autocorrelation(std::span<const double> x, std::size_t lo, std::size_t hi,
                     std::vector<double>& out) {
  out.assign(hi >= lo ? hi - lo + 1 : 0, 0.0);
  const std::size_t n = x.size();
  const double* p = x.data();
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
    auto shift = [P](std::size_t from, std::size_t to, double o) {
      std::size_t i = from;
      for (; i + 2 <= to; i += 2) store2(P + i, load2(P + i) + splat(o));
      for (; i < to; ++i) P[i] += o;
    };
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
    const V2 vinv = splat(inv);
    std::size_t i = first;
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
    const V2 mean = splat(hsum(s0 + s1) / static_cast<double>(n));
    std::size_t i = 0;
    for (; i + 2 <= n; i += 2) store2(w + i, load2(w + i) - mean);
    for (; i < n; ++i) w[i] -= mean[0];
  }
  autocorrelation(std::span<const double>(w, n), lo, hi, out);
}

std::vector<std::pair<std::size_t, std::size_t>> runs_above(std::span<const double> a, double threshold) {
  const std::size_t n = a.size();
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  if (n == 0) return runs;
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
    for (std::size_t w = 0; w < bits.size(); ++w) {
      const std::size_t lo = std::max<std::size_t>(1, w * 64), hi = std::min(n - 1, w * 64 + 64);
      std::uint64_t word = 0;
      std::size_t i = lo;
      auto one = [&](std::size_t j) { word |= static_cast<std::uint64_t>((p[j - 1] + p[j]) + p[j + 1] >= cut) << (j % 64); };
#if defined(__SSE2__)
      // Two samples per compare, their bits taken with movmskpd (same sums, same order).
      if (i % 2 != 0 && i < hi) one(i++);
      const V2 vcut = splat(cut);
      for (; i + 2 <= hi; i += 2) {
        const V2 sum3 = (load2(p + i - 1) + load2(p + i)) + load2(p + i + 1);
        const auto mask = static_cast<unsigned>(__builtin_ia32_movmskpd(sum3 >= vcut ? splat(-1.0) : splat(0.0)));
        word |= static_cast<std::uint64_t>(mask) << (i % 64);
      }
#endif
      for (; i < hi; ++i) one(i);
      bits[w] = word;
    }
  } else {
    for (std::size_t i = 1; i + 1 < n; ++i) set(i, (p[i - 1] + p[i] + p[i + 1]) / 3.0 > threshold);
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

double parabolic_offset(double a, double b, double c) {
  const double denom = a - 2 * b + c;
  if (!(std::abs(denom) > 1e-15)) return 0.0;
  return std::clamp(0.5 * (a - c) / denom, -0.5, 0.5);
}

}  // namespace epochcast::signal
