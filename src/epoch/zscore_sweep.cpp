// The z-score pyramid sweep and the halving of a level (declared in signal.hpp).
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

namespace {
void halve_base(const double* p, double* o, std::size_t m) {
  std::size_t k = 0;
  for (; k + 2 <= m; k += 2) store2(o + k, pair_means(load2(p + 2 * k), load2(p + 2 * k + 2)));
  for (; k < m; ++k) o[k] = 0.5 * (p[2 * k] + p[2 * k + 1]);
}

}  // namespace

Buffer halve(std::span<const double> x) {
  const std::size_t m = x.size() / 2;
  Buffer out(m);
  halve_base(x.data(), out.data(), m);
  return out;
}

}  // namespace epochcast::signal

#include "fp_contract_off_end.hpp"
