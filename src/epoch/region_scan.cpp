// The whole-region search's inner scan. Same arithmetic, in the same order per value, as the
// scan it replaced (bench/region_search_reference.hpp); faster by where it keeps its data:
// the running median keeps its window sorted instead of selecting from a copy per sample, the
// boundary positions of a phase are rounded once for all channels, and the windowed maxima are
// stored sample-major so one boundary reads every channel from one or two cache lines.
#include "region_scan.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>

namespace epochcast::detail {
namespace {

// std::lround without its libm call (18 % of a predict's instructions in callgrind, one call per
// boundary sample): truncation and the remaining fraction are exact in double, then half away
// from zero, as lround rounds. Positions here are far below 2^53.
inline long scan_round_half_away(double x) {
  long r = static_cast<long>(x);
  const double f = x - static_cast<double>(r);
  r += f >= 0.5;
  r -= f <= -0.5;
  return r;
}

// floor and ceil to an integer without the libm call (baseline x86-64 has no rounding
// instruction; two calls per phase were ~5 % of a scan): exact for |x| < 2^62.
inline long scan_floor(double x) {
  const long i = static_cast<long>(x);
  return i - (x < static_cast<double>(i));
}
inline long scan_ceil(double x) {
  const long i = static_cast<long>(x);
  return i + (x > static_cast<double>(i));
}

// Two doubles per operation (GCC/Clang vector extension): IEEE division and addition lane by
// lane give the scalar results bit for bit.
using ScanV2 = double __attribute__((vector_size(16)));
inline ScanV2 scan_load2(const double* p) {
  ScanV2 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void scan_store2(double* p, ScanV2 v) { std::memcpy(p, &v, sizeof v); }

// Per channel j < 2W: sums[j] = the sum over k in [k_first, k_last] of t[round(s + P k) * Ap + j],
// in k order; with W fixed the partial sums stay in registers.
template <std::size_t W>
void scan_boundary_sums(const double* t, std::size_t Ap, double s, double P, long k_first, long k_last, double* sums) {
  ScanV2 acc[W];
  for (std::size_t w = 0; w < W; ++w) acc[w] = ScanV2{0.0, 0.0};
  for (long k = k_first; k <= k_last; ++k) {
    const double* row = t + static_cast<std::size_t>(scan_round_half_away(s + P * static_cast<double>(k))) * Ap;
    for (std::size_t w = 0; w < W; ++w) acc[w] += scan_load2(row + 2 * w);
  }
  for (std::size_t w = 0; w < W; ++w) scan_store2(sums + 2 * w, acc[w]);
}

void scan_boundary_sums_any(const double* t, std::size_t Ap, double s, double P, long k_first, long k_last,
                            double* sums) {
  switch (Ap / 2) {
    case 1: return scan_boundary_sums<1>(t, Ap, s, P, k_first, k_last, sums);
    case 2: return scan_boundary_sums<2>(t, Ap, s, P, k_first, k_last, sums);
    case 3: return scan_boundary_sums<3>(t, Ap, s, P, k_first, k_last, sums);
    case 4: return scan_boundary_sums<4>(t, Ap, s, P, k_first, k_last, sums);
    case 5: return scan_boundary_sums<5>(t, Ap, s, P, k_first, k_last, sums);
    case 6: return scan_boundary_sums<6>(t, Ap, s, P, k_first, k_last, sums);
    case 7: return scan_boundary_sums<7>(t, Ap, s, P, k_first, k_last, sums);
    case 8: return scan_boundary_sums<8>(t, Ap, s, P, k_first, k_last, sums);
    default: break;
  }
  std::fill(sums, sums + Ap, 0.0);
  for (long k = k_first; k <= k_last; ++k) {
    const double* row = t + static_cast<std::size_t>(scan_round_half_away(s + P * static_cast<double>(k))) * Ap;
    for (std::size_t j = 0; j < Ap; j += 2) scan_store2(sums + j, scan_load2(sums + j) + scan_load2(row + j));
  }
}

// Sliding maximum over [i - h, i + h] (clipped).
void scan_sliding_max(const std::vector<double>& g, std::size_t h, std::vector<double>& out) {
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

}  // namespace

Excursions region_excursions(const std::vector<std::span<const double>>& ch) {
  Excursions out;
  const std::size_t n = ch.empty() ? 0 : ch[0].size();
  out.g.assign(n, 0.0);
  if (n < 6) return out;
  std::vector<double> d(n), s, w;
  // Running median over kSlowFraction of the region: slower structure (thermal drift, memory
  // growing) is no boundary evidence, and would make every grid look good on a few channels.
  // Window of sample i: [i - half, i + half] clipped; kept sorted as it slides (one insertion
  // and one removal per sample); its median is the element of rank size / 2.
  const auto half = static_cast<std::size_t>(std::max(2.0, std::round(kSlowFraction * static_cast<double>(n) / 2)));
  for (const auto& x : ch) {
    double sum = 0;
    w.clear();
    // A NaN (not expected: the grid fills gaps) has no place in a sorted window: then the
    // window is copied and selected per sample, as before.
    const bool sortable = std::none_of(x.begin(), x.end(), [](double v) { return std::isnan(v); });
    std::size_t a = 0, b = 0;  // the window [a, b) of x held in w
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t na = i > half ? i - half : 0, nb = std::min(n, i + half + 1);
      if (!sortable) {
        w.assign(x.begin() + static_cast<std::ptrdiff_t>(na), x.begin() + static_cast<std::ptrdiff_t>(nb));
        std::nth_element(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(w.size() / 2), w.end());
        sum += d[i] = std::abs(x[i] - w[w.size() / 2]);
        continue;
      }
      for (; b < nb; ++b) w.insert(std::upper_bound(w.begin(), w.end(), x[b]), x[b]);
      // The value leaving is found by equality (-0.0 may take +0.0's place: |x - median| is
      // the same either way).
      for (; a < na; ++a) w.erase(std::lower_bound(w.begin(), w.end(), x[a]));
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

void permute_excursions(const Excursions& ex, std::span<const std::size_t> perm, Excursions& out) {
  out.g.resize(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) out.g[i] = ex.g[perm[i]];
  out.e.resize(ex.e.size());
  for (std::size_t c = 0; c < ex.e.size(); ++c) {
    out.e[c].resize(perm.size());
    for (std::size_t i = 0; i < perm.size(); ++i) out.e[c][i] = ex.e[c][perm[i]];
  }
}

ScanBest region_scan(const Excursions& ex, const RegionSearchOptions& o, double p_lo, double p_hi, double stop_at) {
  ScanBest best;
  const std::size_t C = ex.e.size();
  if (C == 0) return best;
  const std::size_t N = ex.e[0].size();
  const auto n = static_cast<double>(N);
  // The windowed maxima depend only on the half-width h, not on P; every h from 1 up to the
  // largest the periods reach is used, so they are made in order, each from the last:
  // max over [i - h, i + h] = max(level h - 1 at i, x[i - h], x[i + h]) (windows clipped at the
  // ends, as the deque's). A channel with a NaN excursion takes the deque per level instead
  // (max with NaN depends on the order of comparisons). Per h: the channels with a spread
  // (sd > 0), their maxima sample-major (t[i * A + j] for the j-th such channel), and their mean
  // and spread over the full windows. Rows are padded to an even stride Ap (pad: maxima 0,
  // mean 0, spread 1) so two channels go through each vector operation.
  struct PerH {
    bool done = false;
    std::size_t A = 0, Ap = 0;
    std::vector<double> t, mu, sd;
  };
  std::vector<PerH> cache;
  const std::size_t Cp = (C + 1) & ~std::size_t{1};
  bool any_nan = false;
  for (std::size_t c = 0; c < C; ++c)
    any_nan = any_nan || std::any_of(ex.e[c].begin(), ex.e[c].end(), [](double v) { return std::isnan(v); });
  // Sample-major excursions X[i * Cp + c] and the maxima at half-width `made` (pad lanes 0).
  std::vector<double> X(N * Cp, 0.0);
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t i = 0; i < N; ++i) X[i * Cp + c] = ex.e[c][i];
  std::vector<double> L = X, col, a(Cp), v(Cp);
  std::size_t made = 0;
  std::vector<double> zc, sums, sdk, q;
  std::vector<std::size_t> kept;
  std::vector<double> root;  // root[k] = sqrt(k + 1), padded to an even length
  for (std::size_t k = 0; k < C + 1; ++k) root.push_back(std::sqrt(static_cast<double>(k + 1)));
  // Makes the maxima of half-width made + 1 and their statistics (full windows: [h, N - 1 - h]).
  // Every channel's sums run in sample order as before, the channels side by side.
  const auto make_next = [&]() {
    const std::size_t h = ++made;
    if (cache.size() <= h) cache.resize(h + 1);
    PerH& ph = cache[h];
    ph.done = true;
    if (any_nan) {
      for (std::size_t c = 0; c < C; ++c) {
        scan_sliding_max(ex.e[c], h, col);
        for (std::size_t i = 0; i < N; ++i) L[i * Cp + c] = col[i];
      }
    } else {
      for (std::size_t i = 0; i < N; ++i) {
        double* row = &L[i * Cp];
        for (std::size_t j = 0; j < Cp; j += 2) {
          ScanV2 m = scan_load2(row + j);
          if (i >= h) {
            const ScanV2 x = scan_load2(&X[(i - h) * Cp + j]);
            m = m > x ? m : x;  // max; no NaN here, and the values are >= +0 (no signed zeros)
          }
          if (i + h < N) {
            const ScanV2 x = scan_load2(&X[(i + h) * Cp + j]);
            m = m > x ? m : x;
          }
          scan_store2(row + j, m);
        }
      }
    }
    if (2 * h + 1 >= N) return;
    const std::size_t lo = h, hi = N - 1 - h;
    const double cnt = static_cast<double>(hi - lo + 1);
    std::fill(a.begin(), a.end(), 0.0);
    std::fill(v.begin(), v.end(), 0.0);
    for (std::size_t i = lo; i <= hi; ++i)
      for (std::size_t j = 0; j < Cp; j += 2) scan_store2(&a[j], scan_load2(&a[j]) + scan_load2(&L[i * Cp + j]));
    for (std::size_t j = 0; j < Cp; ++j) a[j] /= cnt;
    for (std::size_t i = lo; i <= hi; ++i)
      for (std::size_t j = 0; j < Cp; j += 2) {
        const ScanV2 d = scan_load2(&L[i * Cp + j]) - scan_load2(&a[j]);
        scan_store2(&v[j], scan_load2(&v[j]) + d * d);
      }
    kept.clear();
    for (std::size_t c = 0; c < C; ++c) {
      const double sd = std::sqrt(v[c] / cnt);
      if (!(sd > 0)) continue;
      ph.mu.push_back(a[c]);
      ph.sd.push_back(sd);
      kept.push_back(c);
    }
    ph.A = kept.size();
    ph.Ap = (ph.A + 1) & ~std::size_t{1};
    ph.mu.resize(ph.Ap, 0.0);
    ph.sd.resize(ph.Ap, 1.0);
    if (ph.A == C) {  // the usual case: every channel kept, the layout as it is
      ph.t = L;
      return;
    }
    ph.t.assign(N * ph.Ap, 0.0);
    for (std::size_t j = 0; j < ph.A; ++j)
      for (std::size_t i = 0; i < N; ++i) ph.t[i * ph.Ap + j] = L[i * Cp + kept[j]];
  };
  for (double P = p_lo; P <= p_hi; P *= kPeriodStep)
  for (double slack : {kBoundarySlackTight, kBoundarySlack}) {
    const auto h = static_cast<std::size_t>(std::max(1.0, std::round(slack * P)));
    if (2 * h + 1 >= N) break;
    const std::size_t lo = h, hi = N - 1 - h;  // full windows only
    while (made < h) make_next();
    PerH& ph = cache[h];
    const std::size_t A = ph.A, Ap = ph.Ap;
    if (A == 0) continue;
    const double* t = ph.t.data();
    sums.resize(Ap);
    zc.resize(Ap);
    sdk.resize(Ap);
    q.resize(Ap);
    double sdk_for = -1;  // the K that sdk[j] = sd[j] / sqrt(K) was made for
    const long k_min = o.idle_before ? 1L : 0L;
    // Phase = position of boundary 0. Anchored at the start: within [-slack, lead-in] periods.
    const double s_lo = o.idle_before ? -kBoundarySlack * P : 0.0;
    const double s_hi = o.idle_before ? kLeadIn * P : P;
    for (double s = s_lo; s < s_hi; s += 1.0) {
      // Inner boundaries only: with idle before, boundary 0 is the job's start-up ramp.
      long k_first = std::max(k_min, scan_ceil((static_cast<double>(lo) - s) / P));
      long k_last = scan_floor((static_cast<double>(hi) - s) / P);
      if (o.idle_after) {
        // Anchored at the end: the region's end within [-slack, +lead-in] periods of a boundary.
        const double end_k = (n - 1 - s) / P;
        const long whole_k = scan_round_half_away(end_k);
        const double whole = static_cast<double>(whole_k);
        if ((end_k - whole) < -kBoundarySlack || (end_k - whole) > kLeadIn) continue;
        k_last = std::min(k_last, whole_k - 1);
      }
      if (k_last - k_first + 1 < 2) continue;
      const double K = static_cast<double>(k_last - k_first + 1);
      if (K != sdk_for) {
        sdk_for = K;
        const double rootK = std::sqrt(K);
        for (std::size_t j = 0; j < Ap; ++j) sdk[j] = ph.sd[j] / rootK;
      }
      // Per channel the boundary maxima are summed in boundary order, as one channel at a time.
      scan_boundary_sums_any(t, Ap, s, P, k_first, k_last, sums.data());
      // z_c = (mean - mu_c) / (sd_c / sqrt(K)).
      const ScanV2 vK = {K, K};
      for (std::size_t j = 0; j < Ap; j += 2)
        scan_store2(&zc[j], (scan_load2(&sums[j]) / vK - scan_load2(&ph.mu[j])) / scan_load2(&sdk[j]));
      // Adaptive combination: the best Stouffer sum of the k strongest channels, over k (a
      // signature carried by two channels of eight is not averaged away by the other six).
      std::sort(zc.begin(), zc.begin() + static_cast<std::ptrdiff_t>(A), std::greater<>());
      double acc = 0;
      for (std::size_t k = 0; k < A; ++k) q[k] = acc += zc[k];
      for (std::size_t k = 0; k < A; k += 2) scan_store2(&q[k], scan_load2(&q[k]) / scan_load2(&root[k]));
      double Z = -1e300;
      for (std::size_t k = 0; k < A; ++k) Z = std::max(Z, q[k]);
      if (Z > best.z) {
        best = {Z, P, s, h, static_cast<std::size_t>(k_first), static_cast<std::size_t>(k_last)};
        if (Z >= stop_at) return best;
      }
    }
  }
  return best;
}

}  // namespace epochcast::detail
