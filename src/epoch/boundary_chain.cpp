// The boundary chain: per period and slack, the chain of boundaries of largest total evidence
// above the windowed maximum's mean, by dynamic programming over samples (a sliding maximum over
// the admissible previous boundaries: O(samples) per period). docs/detection.md "Whole-region search", step 4b.
#include "boundary_chain.hpp"

#include <algorithm>
#include <cmath>
#include <deque>

namespace epochcast::detail {
namespace {

// Mean and standard deviation of the maximum of g over [i - h, i + h] at the full windows,
// for h = 1, 2, ... as asked (each level from the last: max(level h - 1, g[i - h], g[i + h])).
struct ChainWindowStats {
  const std::vector<double>& g;
  std::vector<double> level;
  std::size_t made = 0;
  std::vector<double> mu, sd;
  explicit ChainWindowStats(const std::vector<double>& x) : g(x), level(x) {}
  void upto(std::size_t h) {
    const std::size_t n = g.size();
    while (made < h) {
      const std::size_t k = ++made;
      for (std::size_t i = 0; i < n; ++i) {
        if (i >= k) level[i] = std::max(level[i], g[i - k]);
        if (i + k < n) level[i] = std::max(level[i], g[i + k]);
      }
      double a = 0, v = 0, cnt = 0;
      if (2 * k + 1 < n) {
        for (std::size_t i = k; i + k < n; ++i) a += level[i], cnt += 1;
        a /= cnt;
        for (std::size_t i = k; i + k < n; ++i) v += (level[i] - a) * (level[i] - a);
        v = std::sqrt(v / cnt);
      }
      mu.resize(k + 1, 0.0);
      sd.resize(k + 1, 0.0);
      mu[k] = a;
      sd[k] = v;
    }
  }
};

}  // namespace

ChainBest chain_scan(const Excursions& ex, const RegionSearchOptions& o, double p_lo, double p_hi, double stop_at) {
  ChainBest best;
  const std::vector<double>& g = ex.g;
  const std::size_t N = g.size();
  if (N < 8) return best;
  ChainWindowStats stats(g);
  std::vector<double> f(N);
  std::vector<long> parent(N);
  std::vector<std::size_t> count(N);
  std::deque<std::size_t> q;
  constexpr double kNone = -1e300;
  for (double P = p_lo; P <= p_hi; P *= kPeriodStep)
    for (double slack : kChainSlacks) {
      const auto h = static_cast<std::size_t>(std::max(1.0, std::round(slack * P)));
      if (2 * h + 1 >= N) break;
      stats.upto(h);
      const double mu = stats.mu[h], sd = stats.sd[h];
      if (!(sd > 0)) continue;
      const long lo = static_cast<long>(h), hi = static_cast<long>(N - 1 - h);
      const long gap_min = std::max(1L, static_cast<long>(std::ceil(P * (1 - slack)))),
                 gap_max = static_cast<long>(std::floor(P * (1 + slack)));
      if (gap_max < gap_min) continue;
      const long edge_min = gap_min, edge_max = static_cast<long>(std::floor(P * (1 + kLeadIn)));
      const auto last = static_cast<long>(N - 1);
      // Where a chain may start and end: within an epoch of the region's edges, or an epoch
      // (less slack, plus lead-in) from an edge that is itself a boundary (idle outside).
      const auto starts = [&](long i) { return o.idle_before ? (i >= edge_min && i <= edge_max) : i <= lo + gap_max; };
      const auto ends = [&](long i) {
        return o.idle_after ? (last - i >= edge_min && last - i <= edge_max) : i >= hi - gap_max;
      };
      q.clear();
      long next = lo;  // the next previous-boundary candidate to enter the window
      double top = kNone;
      long top_at = -1;
      for (long i = lo; i <= hi; ++i) {
        // Admissible previous boundaries: j in [i - gap_max, i - gap_min].
        for (; next <= i - gap_min; ++next) {
          const auto j = static_cast<std::size_t>(next);
          if (f[j] <= kNone) continue;
          while (!q.empty() && f[q.back()] <= f[j]) q.pop_back();
          q.push_back(j);
        }
        while (!q.empty() && static_cast<long>(q.front()) < i - gap_max) q.pop_front();
        const auto u = static_cast<std::size_t>(i);
        double prev = kNone;
        long from = -1;
        if (!q.empty()) prev = f[q.front()], from = static_cast<long>(q.front());
        if (starts(i) && prev < 0) prev = 0, from = -1;
        if (prev <= kNone) {
          f[u] = kNone;
          continue;
        }
        f[u] = prev + (g[u] - mu);
        parent[u] = from;
        count[u] = from < 0 ? 1 : count[static_cast<std::size_t>(from)] + 1;
        if (ends(i) && count[u] >= 2) {
          const double z = f[u] / (sd * std::sqrt(static_cast<double>(count[u])));
          if (z > top) top = z, top_at = i;
        }
      }
      if (top_at >= 0 && top > best.z) {
        best.z = top;
        best.period = P;
        best.slack = slack;
        best.boundaries.clear();
        for (long i = top_at; i >= 0; i = parent[static_cast<std::size_t>(i)]) best.boundaries.push_back(static_cast<std::size_t>(i));
        std::reverse(best.boundaries.begin(), best.boundaries.end());
        if (best.z >= stop_at) return best;
      }
    }
  return best;
}

}  // namespace epochcast::detail
