// Boundary events: deep short dips of the activity channels, and the comb through them.
// docs/detection.md "Method" 9.
#include "event_proposer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "signal.hpp"

namespace epochcast::detail {
namespace {

constexpr double kEventDepth = 4.0;      // noise widths below the busy level
constexpr double kMinEventDrop = 0.03;   // and at least 3 % of the channel's idle-to-busy range
constexpr std::size_t kMaxEvents = 48;   // more distinct deep dips than this: not sparse boundary events
// A channel's noise width is at least this many reading steps and this fraction of its
// idle-to-busy range (quantised and near-constant channels would otherwise make any dip deep).
constexpr double kNoiseSteps = 2;
constexpr double kNoiseRange = 0.02;
// A comb tooth is hit by an event within this fraction of the period (at least one sample).
constexpr double kCombTolerance = 0.12;
// Every pair of events divided by 1..kMaxDivisor proposes a period (up to 3 missed between).
constexpr int kMaxDivisor = 4;
// An event this fraction of a period from an idle edge is that edge's ramp, not a boundary.
constexpr double kEdgeRamp = 0.3;
// Confidence factors: sqrt(1 - jitter / kMaxJitter), min(1, rho / kFullAcf) (the activity ACF at
// the comb's period: the two proposers must agree).
constexpr double kMaxJitter = 0.08;
constexpr double kFullAcf = 0.2;
// Guarded (all of the above) by RealTraceEvents.EffnetFoundByBoundaryEventsWithoutHostLog
// and Synthetic.* (the 500 ms few-epoch slices).

struct Event {
  double pos;    // level-0 sample index in the region (parabolic)
  double depth;  // robust sd below the median
  bool edge;     // a busy-region edge with idle outside it
};

struct EventFit {
  bool ok = false;
  double period_samples = 0;
  double t0 = 0;  // first tooth, region samples
  double lag = 0; // dips after the busy-region edges, samples
  long k_first = 0, k_last = -1;
  std::size_t hits = 0, real_hits = 0, teeth = 0, spurious = 0, events = 0;
  double jitter = 1;
  double confidence = 0;
  double acf = 0;
  std::vector<Metric> channels;
};

EventFit detect_by_events(const std::vector<Uniform>& channels, Region region, bool idle_before, bool idle_after,
                          double min_lag, double max_lag, double min_epochs) {
  EventFit best;
  const std::size_t len = region.size();
  if (len < 16) return best;
  // Depth of each sample: the largest drop of any activity channel below its busy level, in
  // that channel's noise widths (robust spread, at least 2 reading steps and 2 % of its
  // idle-to-busy range), counted only where the drop is at least 3 % of that range. A boundary
  // seen by one channel only (power during a checkpoint write, utilisation sampled just past a
  // validation pass) counts.
  std::vector<double> depth(len, 0.0);
  std::vector<Metric> used;
  std::vector<double> dev(len);
  for (const auto& u : channels) {
    if (std::find(kDipChannels.begin(), kDipChannels.end(), u.metric) == kDipChannels.end()) continue;
    const auto x = std::span<const double>(u.values).subspan(region.begin, len);
    const double busy = signal::median(x);
    const double idle = signal::quantile_sampled(u.values, 0.01);
    const double range = busy - idle;
    if (!(range > 1e-9 * (std::abs(busy) + 1))) continue;
    for (std::size_t i = 0; i < len; ++i) dev[i] = std::abs(x[i] - busy);
    std::vector<double> sorted;
    for (std::size_t i = 0; i < len && sorted.size() < 4096; ++i) sorted.push_back(x[i]);
    std::sort(sorted.begin(), sorted.end());
    double step = 0;
    for (std::size_t i = 1; i < sorted.size(); ++i) {
      const double d = sorted[i] - sorted[i - 1];
      if (d > 1e-9 * (std::abs(sorted[i]) + 1) && (step == 0 || d < step)) step = d;
    }
    const double noise = std::max({1.4826 * signal::median(dev), kNoiseSteps * step, kNoiseRange * range});
    const double min_drop = kMinEventDrop * range;
    for (std::size_t i = 0; i < len; ++i) {
      const double drop = busy - x[i];
      if (drop >= min_drop) depth[i] = std::max(depth[i], drop / noise);
    }
    used.push_back(u.metric);
  }
  if (used.empty()) return best;
  const std::vector<double>& score = depth;
  // Local maxima of the depth above the threshold; within min_lag/2 of each other the deepest.
  std::vector<Event> events;
  for (std::size_t i = 0; i < len; ++i) {
    if (depth[i] < kEventDepth) continue;
    if (i > 0 && depth[i - 1] > depth[i]) continue;
    if (i + 1 < len && depth[i + 1] >= depth[i]) continue;
    double off = 0;
    if (i > 0 && i + 1 < len) off = signal::parabolic_offset(depth[i - 1], depth[i], depth[i + 1]);
    const Event e{static_cast<double>(i) + off, depth[i], false};
    if (!events.empty() && e.pos - events.back().pos < 0.5 * min_lag) {
      if (e.depth > events.back().depth) events.back() = e;
    } else {
      events.push_back(e);
    }
  }
  if (events.size() > kMaxEvents) return best;
  const double edge_depth = kEventDepth;
  const double lo_edge = -0.5, hi_edge = static_cast<double>(len) - 0.5;
  std::vector<Event> all = events;
  if (idle_before) all.push_back({lo_edge, edge_depth, true});
  if (idle_after) all.push_back({hi_edge, edge_depth, true});
  std::sort(all.begin(), all.end(), [](const Event& a, const Event& b) { return a.pos < b.pos; });
  std::size_t real_events = events.size();
  if (real_events < 3 || all.size() < 4) return best;

  const double max_p = std::min(max_lag > 0 ? max_lag : 1e300, static_cast<double>(len) / (min_epochs - 0.2));
  double best_score = -1e300;
  for (std::size_t a = 0; a < all.size(); ++a) {
    for (std::size_t b = a + 1; b < all.size(); ++b) {
      for (int m = 1; m <= kMaxDivisor; ++m) {
        const double p = (all[b].pos - all[a].pos) / m;
        if (p < min_lag || p > max_p) continue;
        const double tol = std::max(1.0, kCombTolerance * p);
        // Teeth anchored at event a.
        const auto k_first = static_cast<long>(std::ceil((lo_edge - tol - all[a].pos) / p));
        const auto k_last = static_cast<long>(std::floor((hi_edge + tol - all[a].pos) / p));
        if (k_last - k_first < 2) continue;
        std::size_t hits = 0, real_hits = 0, spurious = 0;
        double s = 0, hit_depth = 0, spur_depth = 0;
        std::vector<char> tooth_hit(static_cast<std::size_t>(k_last - k_first + 1), 0);
        struct Hit {
          double k, pos;
          bool edge;
        };
        std::vector<Hit> hit_list;
        for (const auto& e : all) {
          const double kf = (e.pos - all[a].pos) / p;
          const long k = std::lround(kf);
          const double r = std::abs(e.pos - (all[a].pos + static_cast<double>(k) * p));
          // An event in the ramp next to an idle edge is that edge's boundary, not a new one.
          const bool near_edge = !e.edge && ((idle_before && e.pos - lo_edge < kEdgeRamp * p) ||
                                             (idle_after && hi_edge - e.pos < kEdgeRamp * p));
          if (near_edge) continue;
          if (r <= tol && k >= k_first && k <= k_last && !tooth_hit[static_cast<std::size_t>(k - k_first)]) {
            tooth_hit[static_cast<std::size_t>(k - k_first)] = 1;
            ++hits;
            real_hits += !e.edge;
            s += std::min(e.depth, 2 * kEventDepth);
            hit_depth += std::min(e.depth, 2 * kEventDepth);
            hit_list.push_back({static_cast<double>(k), e.pos, e.edge});
          } else {
            ++spurious;
            s -= std::min(e.depth, 2 * kEventDepth);
            spur_depth += std::min(e.depth, 2 * kEventDepth);
          }
        }
        const std::size_t teeth = tooth_hit.size();
        const std::size_t missed = teeth - hits;
        s -= kEventDepth * static_cast<double>(missed);
        // One missing boundary at most (a quarter of the teeth beyond 8); spurious dips fewer
        // than the real boundaries found and, together, shallower than half of them.
        if (real_hits < 3 || missed > std::max<std::size_t>(1, teeth / 4) || 2 * spurious > hits ||
            spur_depth > 0.5 * hit_depth || (static_cast<double>(hits) - 1) * p < kMinSpanSamples)
          continue;
        if (s <= best_score) continue;
        // Least squares: pos = t0 + k * P (+ lag for the dips). A dip is seen where the sampled
        // activity falls, a busy-region edge where it rises or ends: when both kinds are hit,
        // the dips get their own offset (their lag behind the edges) instead of counting it as
        // jitter.
        std::size_t edge_hits = 0;
        for (const auto& h : hit_list) edge_hits += h.edge;
        const bool two_kinds = edge_hits > 0 && real_hits >= 2;
        double nm[3][4] = {};
        for (const auto& h : hit_list) {
          const double row[3] = {1.0, h.k, h.edge ? 0.0 : 1.0};
          const int cols = two_kinds ? 3 : 2;
          for (int r = 0; r < cols; ++r) {
            for (int c = 0; c < cols; ++c) nm[r][c] += row[r] * row[c];
            nm[r][3] += row[r] * h.pos;
          }
        }
        const int params = two_kinds ? 3 : 2;
        // Gaussian elimination on the normal equations (2x2 or 3x3).
        bool singular = false;
        for (int c = 0; c < params && !singular; ++c) {
          int piv = c;
          for (int r = c + 1; r < params; ++r)
            if (std::abs(nm[r][c]) > std::abs(nm[piv][c])) piv = r;
          if (!(std::abs(nm[piv][c]) > 1e-12)) {
            singular = true;
            break;
          }
          std::swap(nm[c], nm[piv]);
          for (int r = 0; r < params; ++r) {
            if (r == c) continue;
            const double f = nm[r][c] / nm[c][c];
            for (int k = c; k < 4; ++k) nm[r][k] -= f * nm[c][k];
          }
        }
        if (singular) continue;
        const double icpt = nm[0][3] / nm[0][0];
        const double slope = nm[1][3] / nm[1][1];
        const double lag = two_kinds ? nm[2][3] / nm[2][2] : 0.0;
        if (std::abs(slope - p) > 0.1 * p || std::abs(lag) > 0.25 * p) continue;
        double ss = 0;
        for (const auto& h : hit_list) {
          const double r = h.pos - (icpt + slope * h.k + (h.edge ? 0.0 : lag));
          ss += r * r;
        }
        const double dof = static_cast<double>(hit_list.size()) - params;
        if (!(dof >= 1)) continue;
        best_score = s;
        best.ok = true;
        best.period_samples = slope;
        best.t0 = icpt + lag;  // boundaries where the dips are
        best.lag = lag;
        best.k_first = k_first;
        best.k_last = k_last;
        best.hits = hits;
        best.real_hits = real_hits;
        best.teeth = teeth;
        best.spurious = spurious;
        best.events = real_events;
        // Event positions are whole samples (the deepest one): 1/12 sample^2 of the residual
        // variance is that rounding, not jitter of the boundaries.
        best.jitter = std::sqrt(std::max(0.0, ss / dof - 1.0 / 12.0)) / slope;
      }
    }
  }
  if (!best.ok) return best;
  best.channels = used;
  // ACF of the activity score at the comb's period: the two proposers must agree in sign.
  {
    std::vector<double> x(score);
    const double mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(len);
    for (double& v : x) v -= mean;
    const auto lag = static_cast<std::size_t>(std::floor(best.period_samples));
    std::vector<double> r;
    if (lag + 2 < len) {
      signal::autocorrelation(x, lag, lag + 1, r);
      const double frac = best.period_samples - static_cast<double>(lag);
      const double rho = (1 - frac) * r[0] + frac * r[1];
      best.acf = rho / (1.0 - std::min(0.9, best.period_samples / static_cast<double>(len)));
    }
  }
  const double hit_fraction = static_cast<double>(best.hits) / static_cast<double>(best.teeth);
  const double clean = 1.0 - static_cast<double>(best.spurious) / static_cast<double>(best.hits);
  const double s_reg = std::sqrt(clamp01(1.0 - best.jitter / kMaxJitter));
  const double s_acf = clamp01(best.acf / kFullAcf);
  const double cycles = static_cast<double>(len) / best.period_samples;
  const double s_cycles = clamp01((cycles - 2.0) / 1.0);
  best.confidence = clamp01(hit_fraction * clean * s_reg * s_acf * (0.5 + 0.5 * s_cycles));
  return best;
}

}  // namespace

PeriodHypothesis propose_by_events(const ProposerInput& in) {
  const Region region = in.region;
  const double dt = in.grid.dt;
  const EventFit ev = detect_by_events(in.grid.channels, region, in.idle_before(), in.idle_after(), in.min_lag,
                                       in.max_lag, std::max(2.0, static_cast<double>(in.options.min_epochs)));
  PeriodHypothesis h;
  if (!ev.ok) return h;
  h.ok = true;
  h.period_samples = ev.period_samples;
  h.confidence = ev.confidence;
  h.epochs = static_cast<double>(region.size()) / ev.period_samples;
  h.channels = ev.channels;
  // Boundaries: the comb's teeth, snapped to the busy region's edges at the ends.
  const double period_s = ev.period_samples * dt;
  const double start_s = in.start_s(), end_s = in.end_s();
  for (long k = ev.k_first; k <= ev.k_last; ++k) {
    double x = ev.t0 + ev.period_samples * static_cast<double>(k);
    x = std::clamp(x, -0.5, static_cast<double>(region.size()) - 0.5);
    h.boundaries_s.push_back((static_cast<double>(region.begin) + x) * dt);
  }
  auto& eb = h.boundaries_s;
  if (in.idle_before() && !eb.empty() && std::abs(eb.front() - start_s) < 0.3 * period_s) eb.front() = start_s;
  if (in.idle_after() && !eb.empty() && std::abs(eb.back() - end_s) < 0.3 * period_s) eb.back() = end_s;
  h.why = fmt::format(
      "period {:.1f} samples from boundary events: {}/{} boundaries are deep short dips ({} spurious, jitter "
      "{:.1f} %), activity autocorrelation {:.2f}, {:.1f} epochs in view",
      ev.period_samples, ev.hits, ev.teeth, ev.spurious, 100 * ev.jitter, ev.acf, h.epochs);
  h.note = fmt::format("boundary events suggest {:.3g} s ({}/{} boundaries, {} spurious, confidence {:.2f})",
                       ev.period_samples * dt, ev.hits, ev.teeth, ev.spurious, ev.confidence);
  return h;
}

}  // namespace epochcast::detail
