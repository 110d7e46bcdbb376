// The edge-anchored excursion chain and its Monte Carlo null. docs/detection.md "Method" 10.
#include "edge_chain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <span>
#include <utility>

#include "signal.hpp"

namespace epochcast::detail {
namespace {

constexpr double kStepClip = 4.0;          // per-channel step z-scores are clipped here
constexpr double kCoincidence = 5.0;       // summed step z: more than one channel's clip
constexpr double kChainJitter = 0.15;      // allowed boundary deviation per epoch (x sqrt(epochs))
constexpr std::size_t kChainMaxEvents = 24;  // more excursions than this: not sparse boundaries
constexpr int kChainMaxEpochs = 32;
constexpr int kChainDraws = 2000;          // Monte Carlo null draws (p resolution 1/2001)
// The null stops once this many draws align as well (p is plainly large by then).
constexpr int kStopAsGood = 40;
// Steps within this fraction of an epoch of an edge are the edge's own ramp (the start-up
// transient, the last validation pass), for the data and the null alike.
constexpr double kEdgeZone = 0.3;
// Confidence = -log10(p) / kConfidenceDecades: 0.5 at p = 1 %, 0.75 at 0.1 %.
// Guarded (with the constants above) by LaunchBound.* (chain finds right over 50 seeds, its null
// twin confirmed at most once in 125).
constexpr double kConfidenceDecades = 4.0;

struct ChainFit {
  bool ok = false;
  int epochs = 0;
  double period_samples = 0;
  std::vector<double> boundaries;    // region samples, edges included
  std::size_t hits = 0, teeth = 0, events = 0;
  double tail = 1;                   // binomial tail of the best comb
  double p_value = 1;                // Monte Carlo
  double confidence = 0;
  std::vector<Metric> channels;
};

struct ChainScore {
  double tail = 1;
  int epochs = 0;
  std::size_t hits = 0, teeth = 0, events = 0;
  std::vector<std::pair<long, double>> chain;  // (tooth, position) of the hit events
};

double binomial_tail(int n, double q, int h) {
  double s = 0;
  for (int k = h; k <= n; ++k) {
    double c = 1;
    for (int i = 0; i < k; ++i) c = c * static_cast<double>(n - i) / static_cast<double>(i + 1);
    s += c * std::pow(q, k) * std::pow(1 - q, n - k);
  }
  return std::min(1.0, s);
}

// Best comb over the number of epochs for events at `pos` (sorted, region samples) between the
// edges at -0.5 and len - 0.5. With `keep`, the winning chain is returned too.
ChainScore score_chain(std::span<const double> pos, double len, int n_lo, int n_hi, bool keep) {
  ChainScore best;
  const double a = -0.5, span = len;
  std::vector<double> inner;
  std::vector<long> tooth;
  std::vector<int> dp, from;
  for (int n = n_lo; n <= n_hi; ++n) {
    const double p = span / n;
    auto fits = [&](double gap, long m) {
      return m >= 1 && std::abs(gap - static_cast<double>(m) * p) <= kChainJitter * p * std::sqrt(static_cast<double>(m));
    };
    // Events in the ramps next to the edges belong to the edges' own boundaries.
    inner.clear();
    tooth.clear();
    for (double x : pos) {
      if (x - a < kEdgeZone * p || a + span - x < kEdgeZone * p) continue;
      const long k = std::lround((x - a) / p);
      if (k < 1 || k > n - 1) continue;
      inner.push_back(x);
      tooth.push_back(k);
    }
    const auto e = inner.size();
    const int teeth = n - 1;
    if (e == 0) continue;
    dp.assign(e, 0);
    from.assign(e, -1);
    for (std::size_t j = 0; j < e; ++j) {
      if (fits(inner[j] - a, tooth[j])) dp[j] = 1;
      for (std::size_t i = 0; i < j; ++i)
        if (dp[i] > 0 && dp[i] + 1 > dp[j] && fits(inner[j] - inner[i], tooth[j] - tooth[i])) {
          dp[j] = dp[i] + 1;
          from[j] = static_cast<int>(i);
        }
    }
    int h = 0, last = -1;
    for (std::size_t j = 0; j < e; ++j)
      if (dp[j] > h && fits(a + span - inner[j], n - tooth[j])) h = dp[j], last = static_cast<int>(j);
    if (h < std::max(2, (teeth + 1) / 2)) continue;
    // Chance that a tooth's window holds one of the events placed at random.
    const double w = std::min(1.0, (2 * kChainJitter * p + 1) / std::max(1.0, span - 0.6 * p));
    const double q = 1 - std::pow(1 - w, static_cast<double>(e));
    const double tail = binomial_tail(teeth, q, h);
    if (tail < best.tail) {
      best.tail = tail;
      best.epochs = n;
      best.hits = static_cast<std::size_t>(h);
      best.teeth = static_cast<std::size_t>(teeth);
      best.events = e;
      if (keep) {
        best.chain.clear();
        for (int j = last; j >= 0; j = from[static_cast<std::size_t>(j)])
          best.chain.emplace_back(tooth[static_cast<std::size_t>(j)], inner[static_cast<std::size_t>(j)]);
        std::reverse(best.chain.begin(), best.chain.end());
      }
    }
  }
  return best;
}

ChainFit detect_by_edge_chain(const std::vector<Uniform>& channels, Region region, double min_lag, double max_lag,
                              int min_epochs) {
  ChainFit out;
  const std::size_t len = region.size();
  if (len < 24) return out;
  // Per-channel step z-scores: 2-sample mean after minus before, over the channel's own noise
  // width of that difference (robust spread, at least one reading step), summed into `score`.
  std::vector<double> d(len, 0.0), dev, score(len, 0.0);
  for (const auto& u : channels) {
    if (std::find(kDipChannels.begin(), kDipChannels.end(), u.metric) == kDipChannels.end()) continue;
    const auto x = u.values.subspan(region.begin, len);
    for (std::size_t i = 2; i + 1 < len; ++i) d[i] = 0.5 * (x[i] + x[i + 1]) - 0.5 * (x[i - 2] + x[i - 1]);
    const auto inner = std::span<const double>(d).subspan(2, len - 3);
    const double mid = signal::median(inner);
    dev.clear();
    for (double v : inner) dev.push_back(std::abs(v - mid));
    std::vector<double> sorted(x.begin(), x.begin() + static_cast<long>(std::min<std::size_t>(len, 4096)));
    std::sort(sorted.begin(), sorted.end());
    double step = 0;
    for (std::size_t i = 1; i < sorted.size(); ++i) {
      const double s = sorted[i] - sorted[i - 1];
      if (s > 1e-9 * (std::abs(sorted[i]) + 1) && (step == 0 || s < step)) step = s;
    }
    if (step == 0) continue;  // constant: no evidence
    const double noise = std::max(1.4826 * signal::median(dev), step);
    auto z = [&](std::size_t j) { return j >= 2 && j + 1 < len ? std::min(std::abs(d[j] - mid) / noise, kStepClip) : 0.0; };
    // Either direction (a validation pass raises a starved loop's activity, lowers a busy one's;
    // a 2-sample bump is a step up and one down, merged below into one event); a sample's lag
    // between channels (power follows with a delay) still coincides.
    for (std::size_t i = 1; i + 1 < len; ++i) score[i] += std::max({z(i - 1), z(i), z(i + 1)});
    out.channels.push_back(u.metric);
  }
  if (out.channels.size() < 2) return out;  // coincidence needs two channels
  const double span = static_cast<double>(len);
  const int n_lo = std::max(2, min_epochs);
  const int n_hi = std::min<int>(kChainMaxEpochs, static_cast<int>(span / min_lag));
  const int n_lo_p = max_lag > 0 ? std::max(n_lo, static_cast<int>(std::ceil(span / max_lag))) : n_lo;
  if (n_hi < n_lo_p) return out;
  {
    std::vector<double> pos, val;
    for (std::size_t i = 1; i + 1 < len; ++i) {
      if (score[i] < kCoincidence || score[i - 1] > score[i] || score[i + 1] >= score[i]) continue;
      const double x = static_cast<double>(i) - 0.5;  // the step lies between samples i-1 and i
      if (!pos.empty() && x - pos.back() < 0.5 * min_lag) {
        if (score[i] > val.back()) pos.back() = x, val.back() = score[i];
      } else {
        pos.push_back(x);
        val.push_back(score[i]);
      }
    }
    // The ramps next to the edges (start-up transient, the last validation pass) are the
    // edges' own boundaries: only the interior counts, for the data and the null alike.
    const double zone = kEdgeZone * span / n_lo_p;
    std::erase_if(pos, [&](double x) { return x + 0.5 < zone || span - 0.5 - x < zone; });
    if (pos.size() < 2 || pos.size() > kChainMaxEvents) return out;
    ChainScore obs = score_chain(pos, span, n_lo_p, n_hi, true);
    if (obs.epochs == 0) return out;
    // Null: the same number of events at random positions (at least min_lag/2 apart, as
    // observed), the same statistic; stop early once the alignment is plainly common.
    std::mt19937_64 rng(0x9e3779b97f4a7c15ULL ^ (len * 1315423911ULL) ^ pos.size());
    // Uniform on [zone, span - zone) from the raw 64-bit draws: std::uniform_real_distribution
    // differs between standard libraries, and these p-values are asserted in tests.
    auto where = [&](std::mt19937_64& g) {
      return zone + (span - 2 * zone) * (static_cast<double>(g() >> 11) * 0x1.0p-53);
    };
    std::vector<double> draw;
    int as_good = 0, draws = 0;
    for (; draws < kChainDraws && as_good < kStopAsGood; ++draws) {
      draw.clear();
      for (int tries = 0; draw.size() < pos.size() && tries < 1000; ++tries) {
        const double x = std::floor(where(rng)) - 0.5;  // on the events' half-sample grid
        bool clear = true;
        for (double y : draw) clear = clear && std::abs(x - y) >= 0.5 * min_lag;
        if (clear) draw.push_back(x);
      }
      std::sort(draw.begin(), draw.end());
      if (score_chain(draw, span, n_lo_p, n_hi, false).tail <= obs.tail) ++as_good;
    }
    const double p = std::min(1.0, (as_good + 1.0) / (draws + 1.0));
    out.ok = true;
    out.p_value = p;
    out.tail = obs.tail;
    out.epochs = obs.epochs;
    out.hits = obs.hits;
    out.teeth = obs.teeth;
    out.events = obs.events;
    // Least squares over the edges (teeth 0 and n) and the hit events, the events with their
    // own offset (a rise is seen a sample or so after the edges' kind of boundary).
    const double n = obs.epochs;
    double nm[3][4] = {};
    auto add = [&](double k, double y, bool edge) {
      const double row[3] = {1.0, k, edge ? 0.0 : 1.0};
      for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) nm[r][c] += row[r] * row[c];
        nm[r][3] += row[r] * y;
      }
    };
    add(0, -0.5, true);
    add(n, span - 0.5, true);
    for (const auto& [k, y] : obs.chain) add(static_cast<double>(k), y, false);
    // Solve 3x3 (the edges fix the intercept, the events their offset).
    for (int c = 0; c < 3; ++c) {
      int piv = c;
      for (int r = c + 1; r < 3; ++r)
        if (std::abs(nm[r][c]) > std::abs(nm[piv][c])) piv = r;
      std::swap(nm[c], nm[piv]);
      for (int r = 0; r < 3; ++r) {
        if (r == c || nm[c][c] == 0) continue;
        const double f = nm[r][c] / nm[c][c];
        for (int k = c; k < 4; ++k) nm[r][k] -= f * nm[c][k];
      }
    }
    const double slope = nm[1][1] != 0 ? nm[1][3] / nm[1][1] : span / n;
    out.period_samples = std::abs(slope - span / n) < 0.1 * span / n ? slope : span / n;
    // Boundaries: the edges, the hit events, missed teeth interpolated between neighbours.
    std::vector<std::pair<double, double>> known{{0.0, -0.5}};
    for (const auto& [k, y] : obs.chain) known.emplace_back(static_cast<double>(k), y);
    known.emplace_back(n, span - 0.5);
    out.boundaries.clear();
    for (std::size_t i = 0; i + 1 < known.size(); ++i) {
      const auto [k0, y0] = known[i];
      const auto [k1, y1] = known[i + 1];
      for (double k = k0; k < k1; k += 1) out.boundaries.push_back(y0 + (y1 - y0) * (k - k0) / (k1 - k0));
    }
    out.boundaries.push_back(span - 0.5);
  }
  // 0.5 at p = 1 %, 0.75 at 0.1 %: how unlikely the alignment is by chance.
  if (out.ok) out.confidence = clamp01(-std::log10(out.p_value) / kConfidenceDecades);
  return out;
}

}  // namespace

PeriodHypothesis propose_by_edge_chain(const ProposerInput& in) {
  const Region region = in.region;
  const double dt = in.grid.dt;
  PeriodHypothesis h;
  if (!in.idle_before() || !in.idle_after()) return h;
  const ChainFit ch = detect_by_edge_chain(in.grid.channels, region, in.min_lag, in.max_lag, in.options.min_epochs);
  if (!ch.ok) return h;
  h.ok = true;
  h.period_samples = ch.period_samples;
  h.confidence = ch.confidence;
  h.epochs = ch.epochs;
  h.p_value = ch.p_value;
  h.channels = ch.channels;
  // Boundaries: the edges, the hit events, missed teeth interpolated.
  for (double x : ch.boundaries) h.boundaries_s.push_back((static_cast<double>(region.begin) + x) * dt);
  h.boundaries_s.front() = in.start_s();
  h.boundaries_s.back() = in.end_s();
  h.why = fmt::format(
      "period {:.1f} samples from the busy region's edges and {}/{} inner boundaries at steps seen by two "
      "channels at once ({} such steps; chance alignment p = {:.3f}), {} epochs",
      ch.period_samples, ch.hits, ch.teeth, ch.events, ch.p_value, ch.epochs);
  h.note = fmt::format(
      "edges and coincident steps suggest {} epochs of {:.3g} s ({}/{} inner boundaries, {} steps), but such an "
      "alignment arises by chance with p = {:.3f} (confidence {:.2f})",
      ch.epochs, ch.period_samples * dt, ch.hits, ch.teeth, ch.events, ch.p_value, ch.confidence);
  return h;
}

}  // namespace epochcast::detail
