// A frozen copy of the whole-region search as it was before region_scan.cpp (main eb0a2a3:
// src/epoch/region_search.cpp and the surrogate maker of src/epoch/nulls.cpp), kept as the
// reference that bench/region_search_bench.cpp times side by side with the shipped search and
// that tests/unit/epoch/region_search_identity_test.cpp compares it with, field by field.
// Do not edit: it is the definition of the answers the faster search must reproduce.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "../src/epoch/region_search.hpp"

namespace epochcast::region_reference {
using detail::RegionSearchOptions;
using detail::RegionSearchResult;

namespace ref_nulls {
using cd = std::complex<double>;

// In-place iterative radix-2 FFT; a.size() a power of two. inverse: unscaled.
inline void fft(std::vector<cd>& a, bool inverse) {
  const std::size_t n = a.size();
  for (std::size_t i = 1, j = 0; i < n; ++i) {
    std::size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (std::size_t len = 2; len <= n; len <<= 1) {
    const double ang = 2 * M_PI / static_cast<double>(len) * (inverse ? 1 : -1);
    const cd wl(std::cos(ang), std::sin(ang));
    for (std::size_t i = 0; i < n; i += len) {
      cd w(1);
      for (std::size_t k = 0; k < len / 2; ++k) {
        const cd u = a[i + k], v = a[i + k + len / 2] * w;
        a[i + k] = u + v;
        a[i + k + len / 2] = u - v;
        w *= wl;
      }
    }
  }
}

// Least-squares line of y over its index: (intercept, slope).
inline std::pair<double, double> line_fit(std::span<const double> y) {
  const double n = static_cast<double>(y.size());
  if (y.size() < 2) return {y.empty() ? 0.0 : y[0], 0.0};
  const double mx = (n - 1) / 2;
  double my = 0;
  for (double v : y) my += v;
  my /= n;
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double dx = static_cast<double>(i) - mx;
    sxy += dx * (y[i] - my);
    sxx += dx * dx;
  }
  const double b = sxx > 0 ? sxy / sxx : 0;
  return {my - b * mx, b};
}

inline void phase_randomise(const std::vector<std::span<const double>>& series, std::uint64_t seed,
                     std::vector<std::vector<double>>& out, bool amplitude_adjust) {
  out.resize(series.size());
  if (series.empty()) return;
  const std::size_t n = series[0].size();
  std::size_t m = 1;
  while (m < n) m <<= 1;
  // One set of random phases for every series (the cross-spectra are kept).
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 2 * M_PI);
  std::vector<cd> rot(m, cd(1));
  for (std::size_t k = 1; k < (m + 1) / 2; ++k) {
    rot[k] = std::polar(1.0, u(rng));
    rot[m - k] = std::conj(rot[k]);
  }
  std::vector<cd> a(m);
  std::vector<std::size_t> order(n);
  std::vector<double> sorted(n);
  for (std::size_t s = 0; s < series.size(); ++s) {
    const auto y = series[s];
    auto& o = out[s];
    o.assign(n, 0.0);
    if (n < 4) {
      o.assign(y.begin(), y.end());
      continue;
    }
    const auto [a0, b] = line_fit(y);
    for (std::size_t i = 0; i < m; ++i) a[i] = i < n ? cd(y[i] - (a0 + b * static_cast<double>(i))) : cd(0);
    fft(a, false);
    for (std::size_t k = 0; k < m; ++k) a[k] *= rot[k];
    fft(a, true);
    if (!amplitude_adjust) {
      const double inv = 1.0 / static_cast<double>(m);
      for (std::size_t i = 0; i < n; ++i) o[i] = a[i].real() * inv + a0 + b * static_cast<double>(i);
      continue;
    }
    // Amplitude adjustment: rank of the surrogate value -> the original residual of that rank.
    std::vector<double> resid(n);
    for (std::size_t i = 0; i < n; ++i) resid[i] = y[i] - (a0 + b * static_cast<double>(i));
    sorted = resid;
    std::sort(sorted.begin(), sorted.end());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t p, std::size_t q) { return a[p].real() < a[q].real(); });
    for (std::size_t r = 0; r < n; ++r) o[order[r]] = sorted[r];
    for (std::size_t i = 0; i < n; ++i) o[i] += a0 + b * static_cast<double>(i);
    // Once more on the values themselves (trend restored): each channel keeps exactly its own
    // readings, reading steps included.
    sorted.assign(y.begin(), y.end());
    std::sort(sorted.begin(), sorted.end());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t p, std::size_t q) { return o[p] < o[q]; });
    std::vector<double> v(n);
    for (std::size_t r = 0; r < n; ++r) v[order[r]] = sorted[r];
    o = std::move(v);
  }
}

}  // namespace ref_nulls

namespace ref_detail {

// std::lround without its libm call (18 % of a predict's instructions in callgrind, one call per
// boundary sample): truncation and the remaining fraction are exact in double, then half away
// from zero, as lround rounds. Positions here are far below 2^53.
inline long round_half_away(double x) {
  long r = static_cast<long>(x);
  const double f = x - static_cast<double>(r);
  r += f >= 0.5;
  r -= f <= -0.5;
  return r;
}

// Each boundary may sit this fraction of a period off the even grid: real epochs vary 4-12 %
// in length (issue 23), so over 4-5 epochs a boundary wanders ~15 % from the best grid.
// Guarded by real_traces_test (lenet5, ~6 % variation) and the varied synthetic set.
constexpr double kBoundarySlack = 0.15;
// A second, tight slack for runs whose epochs hardly vary (0-2 %: most runs with a fixed data
// set and no contention); the search takes whichever scores better, the surrogates the same.
constexpr double kBoundarySlackTight = 0.05;
// With idle before the region, the first epoch starts at the region's start, give or take a
// warm-up or lead-in of this fraction of a period (and as much slack early).
constexpr double kLeadIn = 0.3;
// Geometric step of the period grid: finer than the slack, so no period is missed between steps.
constexpr double kPeriodStep = 1.02;
// Structure slower than this fraction of the region is removed before excursions are measured
// (a third of an epoch at 4 epochs, several epochs at 30: boundary signatures are short).
constexpr double kSlowFraction = 1.0 / 12;
// Surrogates scoring as well as the data after which the test stops (p >= ~0.05 by then).
constexpr int kStopAfter = 5;
// Excursions larger than this many mean excursions count as this many (one spike is one event).
constexpr double kExcursionCap = 8;

// Per channel: its excursion |z| in units of its mean excursion, capped; the two samples at each
// end (the region's edge ramp) get the channel's median. Channels without any excursion are left
// out. Also their mean over channels, g (where the largest combined excursion lies: boundaries
// are located on it).
struct Excursions {
  std::vector<std::vector<double>> e;
  std::vector<double> g;
};

inline Excursions excursions(const std::vector<std::span<const double>>& ch) {
  Excursions out;
  const std::size_t n = ch.empty() ? 0 : ch[0].size();
  out.g.assign(n, 0.0);
  if (n < 6) return out;
  std::vector<double> d(n), s, w;
  // Running median over kSlowFraction of the region: slower structure (thermal drift, memory
  // growing) is no boundary evidence, and would make every grid look good on a few channels.
  const auto half = static_cast<std::size_t>(std::max(2.0, std::round(kSlowFraction * static_cast<double>(n) / 2)));
  for (const auto& x : ch) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t a = i > half ? i - half : 0, b = std::min(n, i + half + 1);
      w.assign(x.begin() + static_cast<std::ptrdiff_t>(a), x.begin() + static_cast<std::ptrdiff_t>(b));
      std::nth_element(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(w.size() / 2), w.end());
      sum += d[i] = std::abs(x[i] - w[w.size() / 2]);
    }
    const double mean = sum / static_cast<double>(n);
    if (!(mean > 0)) continue;
    for (double& v : d) v = std::min(v / mean, kExcursionCap);
    s = d;
    std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n / 2), s.end());
    for (std::size_t i = 0; i < 2; ++i) d[i] = d[n - 1 - i] = s[n / 2];
    for (std::size_t i = 0; i < n; ++i) out.g[i] += d[i];
    out.e.push_back(d);
  }
  for (double& v : out.g) v /= static_cast<double>(std::max<std::size_t>(1, out.e.size()));
  return out;
}

// Sliding maximum over [i - h, i + h] (clipped).
inline void sliding_max(const std::vector<double>& g, std::size_t h, std::vector<double>& out) {
  const std::size_t n = g.size();
  out.assign(n, 0.0);
  std::deque<std::size_t> q;
  std::size_t next = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t hi = std::min(n - 1, i + h);
    for (; next <= hi; ++next) {
      while (!q.empty() && g[q.back()] <= g[next]) q.pop_back();
      q.push_back(next);
    }
    while (q.front() + h < i) q.pop_front();
    out[i] = g[q.front()];
  }
}

struct Best {
  double z = -1e300;  // adaptive Stouffer combination over channels of each one's boundary score
  double period = 0, phase = 0;
  std::size_t half = 0, k_first = 0, k_last = 0;
};

// The best (period, phase): for each, every channel's mean windowed maximum at the predicted
// boundaries, standardised against the same maximum at random positions of that channel
// (z_c = (mean - mu_c) / (sd_c / sqrt(K))), combined over channels as the best over k of the
// k strongest channels' sum z_c / sqrt(k).
inline Best scan(const Excursions& ex, const RegionSearchOptions& o, double p_lo, double p_hi) {
  Best best;
  const std::size_t C = ex.e.size();
  if (C == 0) return best;
  const std::size_t N = ex.g.size();
  const auto n = static_cast<double>(N);
  // The windowed maxima depend only on the half-width h (a few distinct values), not on P.
  struct PerH {
    std::vector<std::vector<double>> m;
    std::vector<double> mu, sd;
  };
  std::vector<PerH> cache;
  std::vector<double> zc;
  for (double P = p_lo; P <= p_hi; P *= kPeriodStep)
  for (double slack : {kBoundarySlackTight, kBoundarySlack}) {
    const auto h = static_cast<std::size_t>(std::max(1.0, std::round(slack * P)));
    if (2 * h + 1 >= N) break;
    const std::size_t lo = h, hi = N - 1 - h;  // full windows only
    if (cache.size() <= h) cache.resize(h + 1);
    PerH& ph = cache[h];
    if (ph.m.empty()) {
      ph.m.resize(C);
      ph.mu.resize(C);
      ph.sd.resize(C);
      const double cnt = static_cast<double>(hi - lo + 1);
      for (std::size_t c = 0; c < C; ++c) {
        sliding_max(ex.e[c], h, ph.m[c]);
        double a = 0, v = 0;
        for (std::size_t i = lo; i <= hi; ++i) a += ph.m[c][i];
        a /= cnt;
        for (std::size_t i = lo; i <= hi; ++i) v += (ph.m[c][i] - a) * (ph.m[c][i] - a);
        ph.mu[c] = a;
        ph.sd[c] = std::sqrt(v / cnt);
      }
    }
    const auto& m = ph.m;
    const auto& mu = ph.mu;
    const auto& sd = ph.sd;
    // Phase = position of boundary 0. Anchored at the start: within [-slack, lead-in] periods.
    const double s_lo = o.idle_before ? -kBoundarySlack * P : 0.0;
    const double s_hi = o.idle_before ? kLeadIn * P : P;
    for (double s = s_lo; s < s_hi; s += 1.0) {
      // Inner boundaries only: with idle before, boundary 0 is the job's start-up ramp.
      long k_first = std::max(o.idle_before ? 1L : 0L, static_cast<long>(std::ceil((static_cast<double>(lo) - s) / P)));
      long k_last = static_cast<long>(std::floor((static_cast<double>(hi) - s) / P));
      if (o.idle_after) {
        // Anchored at the end: the region's end within [-slack, +lead-in] periods of a boundary.
        const double end_k = (n - 1 - s) / P;
        const double whole = std::round(end_k);
        if ((end_k - whole) < -kBoundarySlack || (end_k - whole) > kLeadIn) continue;
        k_last = std::min(k_last, static_cast<long>(whole) - 1);
      }
      if (k_last - k_first + 1 < 2) continue;
      const double K = static_cast<double>(k_last - k_first + 1);
      zc.clear();
      for (std::size_t c = 0; c < C; ++c) {
        if (!(sd[c] > 0)) continue;
        double sum = 0;
        for (long k = k_first; k <= k_last; ++k) sum += m[c][static_cast<std::size_t>(round_half_away(s + P * static_cast<double>(k)))];
        zc.push_back((sum / K - mu[c]) / (sd[c] / std::sqrt(K)));
      }
      if (zc.empty()) continue;
      // Adaptive combination: the best Stouffer sum of the k strongest channels, over k (a
      // signature carried by two channels of eight is not averaged away by the other six).
      std::sort(zc.begin(), zc.end(), std::greater<>());
      double Z = -1e300, acc = 0;
      for (std::size_t k = 0; k < zc.size(); ++k) {
        acc += zc[k];
        Z = std::max(Z, acc / std::sqrt(static_cast<double>(k + 1)));
      }
      if (Z > best.z) best = {Z, P, s, h, static_cast<std::size_t>(k_first), static_cast<std::size_t>(k_last)};
    }
  }
  return best;
}

}  // namespace ref_detail
using namespace ref_detail;

inline RegionSearchResult region_search(const std::vector<std::span<const double>>& channels, const RegionSearchOptions& o) {
  RegionSearchResult H;
  if (channels.empty()) return H;
  const std::size_t n = channels[0].size();
  const double p_lo = std::max(2.0, o.min_period);
  const double p_hi = o.max_period > 0 ? std::min(o.max_period, static_cast<double>(n) / (o.min_epochs - 0.2))
                                       : static_cast<double>(n) / (o.min_epochs - 0.2);
  if (n < 16 || p_lo > p_hi) {
    H.why = "region too short for the whole-region search";
    return H;
  }
  const Excursions ex = excursions(channels);
  const std::vector<double>& g = ex.g;
  const Best b = scan(ex, o, p_lo, p_hi);
  if (b.period <= 0) {
    H.why = "no hypothesis fits the region";
    return H;
  }
  // Located boundaries: the largest change within the slack of each predicted one.
  std::vector<double> pos, idx;
  for (std::size_t k = b.k_first; k <= b.k_last; ++k) {
    const double c = b.phase + b.period * static_cast<double>(k);
    const auto lo = static_cast<std::size_t>(std::max(0.0, std::round(c) - static_cast<double>(b.half)));
    const auto hi = std::min(n - 1, static_cast<std::size_t>(std::round(c)) + b.half);
    std::size_t at = lo;
    for (std::size_t i = lo; i <= hi; ++i)
      if (g[i] > g[at]) at = i;
    pos.push_back(static_cast<double>(at));
    idx.push_back(static_cast<double>(k));
  }
  // The region's edges are boundaries when the job is idle outside and they sit where the grid
  // puts boundary 0 / boundary k_last + 1 (within the slack and lead-in).
  const double P0 = b.period;
  if (o.idle_before && b.k_first == 1) {
    pos.insert(pos.begin(), 0.0);
    idx.insert(idx.begin(), 0.0);
  }
  if (o.idle_after) {
    const double end_k = std::round((static_cast<double>(n) - 1 - b.phase) / P0);
    if (static_cast<std::size_t>(end_k) == b.k_last + 1) {
      pos.push_back(static_cast<double>(n) - 1);
      idx.push_back(end_k);
    }
  }
  // Least-squares slope through the located boundaries = the mean epoch.
  double period = P0;
  if (pos.size() >= 2) {
    const double mi = std::accumulate(idx.begin(), idx.end(), 0.0) / static_cast<double>(idx.size());
    const double mp = std::accumulate(pos.begin(), pos.end(), 0.0) / static_cast<double>(pos.size());
    double sxy = 0, sxx = 0;
    for (std::size_t i = 0; i < pos.size(); ++i) sxy += (idx[i] - mi) * (pos[i] - mp), sxx += (idx[i] - mi) * (idx[i] - mi);
    if (sxx > 0) period = sxy / sxx;
  }
  // Nulls: the same search on surrogates; p = (1 + #surrogates at least as good) / (1 + count).
  int ge_phase = 0, ge_block = 0;
  std::vector<std::vector<double>> sur;
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<std::size_t> blk(std::max<std::size_t>(2, n / 24), std::max<std::size_t>(3, n / 8));
  // Block-scrambled first (cheap: no transform): the excursion series cut into blocks of
  // 1/24-1/8 of the region and put back in one random order (the two samples at each end stay:
  // the edge ramp). Every event is kept, their spacing is not. Stops at the first as good.
  int done_block = 0;
  // When the other proposers agree, it goes on after one as good until half are (p > 0.5
  // then): the arbitration also asks whether the hypothesis beats the typical scrambled copy.
  const bool typical = o.agree_period > 0 && std::abs(o.agree_period - period) <= o.agree_tolerance * period;
  const int block_stop = typical ? o.block_surrogates / 2 + 1 : 1;
  for (int s = 0; s < o.block_surrogates && ge_block < block_stop; ++s) {
    ++done_block;
    std::vector<std::pair<std::size_t, std::size_t>> blocks;
    for (std::size_t i = 2; i + 2 < n;) {
      const std::size_t e = std::min(n - 2, i + blk(rng));
      blocks.emplace_back(i, e);
      i = e;
    }
    std::shuffle(blocks.begin(), blocks.end(), rng);
    std::vector<std::size_t> perm(n);
    std::iota(perm.begin(), perm.end(), std::size_t{0});
    std::size_t w = 2;
    for (const auto& [from, to] : blocks)
      for (std::size_t i = from; i < to; ++i) perm[w++] = i;
    Excursions xs = ex;
    for (std::size_t c = 0; c < ex.e.size(); ++c)
      for (std::size_t i = 0; i < n; ++i) xs.e[c][i] = ex.e[c][perm[i]];
    if (scan(xs, o, p_lo, p_hi).z >= b.z) ++ge_block;
  }
  int done = 0;
  // When a block-scrambled copy scored as well (not significant), the phase test still says
  // whether the hypothesis beats the typical surrogate: as many as block copies, stopping
  // once half are as good.
  const int limit = ge_block > 0 ? (typical ? o.block_surrogates : 0) : o.surrogates;
  const int stop = ge_block > 0 ? o.block_surrogates / 2 + 1 : kStopAfter;
  for (int s = 0; s < limit; ++s) {
    // Sequential stop: once `stop` surrogates score as well, p cannot come near the threshold;
    // the p reported is the estimate from those done.
    if (ge_phase >= stop) break;
    ++done;
    ref_nulls::phase_randomise(channels, o.seed + 1 + static_cast<std::uint64_t>(s), sur, o.amplitude_adjust);
    std::vector<std::span<const double>> sp(sur.begin(), sur.end());
    if (scan(excursions(sp), o, p_lo, p_hi).z >= b.z) ++ge_phase;
  }
  H.ok = true;
  H.period_samples = period;
  H.boundaries = pos;
  H.inner = b.k_last - b.k_first + 1;
  H.z = b.z;
  H.p_phase = done > 0 ? (1.0 + ge_phase) / (1.0 + done) : 1.0;
  H.p_block = o.block_surrogates > 0 ? (1.0 + ge_block) / (1.0 + done_block) : 0.0;
  H.p_value = H.p_phase;
  H.epochs = static_cast<double>(n) / period;
  H.why = fmt::format("whole-region search: {} inner boundaries every {:.1f} samples, z = {:.1f} against random "
                      "positions, {}{}",
                      H.inner, period, H.z,
                      done > 0 ? fmt::format("p = {:.2f} against {} phase-randomised surrogates", H.p_value, done)
                               : std::string("phase-randomised surrogates not run"),
                      o.block_surrogates > 0 ? fmt::format(", p = {:.2f} against {} block-scrambled", H.p_block, done_block) : std::string());
  return H;
}

}  // namespace epochcast::region_reference
