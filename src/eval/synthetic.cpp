#include "eval/synthetic.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>

#include "epochcast/core/error.hpp"

namespace epochcast {
namespace {

enum class Phase { kIdle, kWarmupBurst, kWarmupQuiet, kTrain, kEvent };

struct Timeline {
  double train_start = 0;
  std::vector<EpochSpan> epochs;       // absolute seconds
  std::vector<EpochSpan> events;       // boundary signature intervals
  std::vector<EpochSpan> bursts;       // warm-up bursts
  double train_end = 0;
};

Phase phase_at(const Timeline& tl, double t) {
  if (t >= tl.train_start && t < tl.train_end) {
    // Binary search would be faster; epochs are few per evaluation window in practice.
    auto it = std::upper_bound(tl.events.begin(), tl.events.end(), t,
                               [](double v, const EpochSpan& e) { return v < e.start_s; });
    if (it != tl.events.begin()) {
      --it;
      if (t < it->end_s) return Phase::kEvent;
    }
    return Phase::kTrain;
  }
  for (const auto& b : tl.bursts)
    if (t >= b.start_s && t < b.end_s) return Phase::kWarmupBurst;
  if (!tl.bursts.empty() && t >= tl.bursts.front().start_s && t < tl.train_start) return Phase::kWarmupQuiet;
  return Phase::kIdle;
}

}  // namespace

SyntheticTrace make_synthetic_trace(const SyntheticSpec& spec, std::uint64_t seed) {
  if (!(spec.interval_s > 0) || !(spec.period_s > 0) || spec.epochs < 1 || spec.epochs > 10'000'000)
    throw Error(ErrorCode::kInvalidArgument, "synthetic spec: interval_s, period_s and epochs must be positive");
  if (!(spec.scrape_s >= 0) || !(spec.scrape_jitter_s >= 0) || !std::isfinite(spec.scrape_s + spec.scrape_jitter_s))
    throw Error(ErrorCode::kInvalidArgument, "synthetic spec: scrape_s and scrape_jitter_s must be finite and >= 0");
  const double total_s = spec.idle_head_s + spec.warmup_s + std::max(0.0, spec.lead_in_s) +
                         spec.period_s * spec.epochs * 1.2 + spec.idle_tail_s;
  if (total_s / spec.interval_s > 1e8 || (spec.scrape_s > 0 && total_s / spec.scrape_s > 1e8))
    throw Error(ErrorCode::kInvalidArgument, "synthetic spec: more than 1e8 samples");
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);

  Timeline tl;
  // Warm-up: a few short bursts (model build, cudnn autotune, calibration).
  const double warm0 = spec.idle_head_s;
  for (double t = warm0; t < warm0 + spec.warmup_s;) {
    const double len = 0.1 + 0.3 * unit(rng);
    tl.bursts.push_back({t, std::min(t + len, warm0 + spec.warmup_s)});
    t += len + 0.3 + 0.8 * unit(rng);
  }
  tl.train_start = warm0 + spec.warmup_s;
  double t = tl.train_start + std::max(0.0, spec.lead_in_s);
  for (int k = 0; k < spec.epochs; ++k) {
    const double d = spec.period_s * std::max(0.5, 1.0 + spec.period_jitter * gauss(rng));
    tl.epochs.push_back({t, t + d});
    if (spec.event_depth != 0 && spec.boundary_signature) {
      const double ev = std::max(spec.event_duty * d, 0.0);
      if (spec.event_at_start) tl.events.push_back({t, t + ev});
      else tl.events.push_back({t + d - ev, t + d});
    }
    t += d;
  }
  tl.train_end = t;
  if (spec.bump_rate_per_s > 0 && spec.event_depth != 0) {
    // Poisson arrivals over the training span; each as long as a boundary event.
    const double len = spec.event_duty * spec.period_s;
    for (double b = tl.train_start - std::log(1 - unit(rng) + 1e-12) / spec.bump_rate_per_s; b + len < tl.train_end;
         b -= std::log(1 - unit(rng) + 1e-12) / spec.bump_rate_per_s)
      tl.events.push_back({b, b + len});
    std::sort(tl.events.begin(), tl.events.end(),
              [](const EpochSpan& x, const EpochSpan& y) { return x.start_s < y.start_s; });
  }
  const double end_s = t + spec.idle_tail_s;

  // Sampling times with jitter; dropped rows make gaps.
  std::vector<double> times;
  const auto count = static_cast<std::size_t>(end_s / spec.interval_s) + 1;
  times.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    double ti = static_cast<double>(i) * spec.interval_s +
                spec.time_jitter * spec.interval_s * gauss(rng);
    if (!times.empty()) ti = std::max(ti, times.back() + 1e-3 * spec.interval_s);
    times.push_back(std::max(0.0, ti));
  }
  std::vector<bool> keep(times.size(), true);
  if (spec.missing_fraction > 0) {
    const double run = std::max(1.0, spec.missing_run);
    const double start_p = spec.missing_fraction / run;
    for (std::size_t i = 1; i < times.size();) {
      if (unit(rng) < start_p) {
        const auto len = static_cast<std::size_t>(std::max(1.0, run * -std::log(1 - unit(rng) + 1e-12)));
        for (std::size_t k = i; k < std::min(times.size(), i + len); ++k) keep[k] = false;
        i += len;
      } else {
        ++i;
      }
    }
  }

  SyntheticTrace out;
  Trace& tr = out.trace;
  tr.source = fmt::format("synthetic(seed={})", seed);
  tr.format = "synthetic";
  tr.gpu = GpuIdentity{0, "Synthetic GPU", ""};
  tr.gpus_in_source = {tr.gpu};
  const double t_first = times.front();
  double t_first_shift = 0;  // the read-back's first grid point (scrape aliasing)
  tr.start_unix_s = spec.start_unix_s + t_first;
  tr.first_timestamp = fmt::format("{:.3f}", tr.start_unix_s);
  for (std::size_t i = 0; i < times.size(); ++i)
    if (keep[i]) tr.time_s.push_back(times[i] - t_first);

  const std::array<Metric, 6> metrics{Metric::kGpuUtil, Metric::kMemUtil, Metric::kPower,
                                      Metric::kSmClock, Metric::kMemUsed, Metric::kHostCpuUtil};
  // Per-channel ranges for noise, spikes and drift.
  const std::array<double, 6> range{100, 50, 500, 15, 10, 10};
  std::array<std::vector<double>*, 6> ch{};
  tr.channels.reserve(metrics.size());
  for (Metric m : metrics) tr.channel(m);  // all first: channel() may reallocate the vector
  for (std::size_t m = 0; m < metrics.size(); ++m) {
    ch[m] = &tr.find(metrics[m])->values;
    ch[m]->clear();
    ch[m]->reserve(tr.time_s.size());
  }
  const double busy = spec.busy_util_pct;
  const double depth = std::clamp(spec.event_depth, -1.0, 1.0);
  const double iter_phase = 2 * std::numbers::pi * unit(rng);
  const double power_tau_s = 0.4;
  double power_state = 120;
  double last_t = 0;
  // Extra draws only when the options are on, so the default traces stay as they were.
  const double refresh_phase = spec.util_refresh_s > 0 ? spec.util_refresh_s * unit(rng) : 0.0;
  double held_tick = -1e300, held_util = 0, held_mem = 0, wander = 0;
  for (std::size_t i = 0; i < times.size(); ++i) {
    const double ts = times[i];
    // Utilization is the busy fraction over the last ~0.2 s (as nvidia-smi reports it).
    double util = 0, mem = 0, host = 1, power_target = 0;
    // The utilisation reading: the busy fraction over the window before the last refresh.
    const double tick = spec.util_refresh_s > 0
                            ? refresh_phase + spec.util_refresh_s * std::floor((ts - refresh_phase) / spec.util_refresh_s)
                            : ts;
    const double window = spec.util_refresh_s > 0 ? spec.util_refresh_s : 0.2;
    constexpr int kSub = 4;
    for (int s = 0; s < kSub; ++s) {
      const double tt = ts - 0.2 * (s + 0.5) / kSub;
      const double tu = tick - window * (s + 0.5) / kSub;
      if (spec.util_refresh_s > 0) {
        const Phase pu = phase_at(tl, tu);
        const double u = pu == Phase::kTrain ? busy : pu == Phase::kEvent ? busy * (1 - depth)
                         : pu == Phase::kWarmupBurst ? 40.0 : 0.0;
        util += u / kSub;
        mem += spec.mem_util_scale * u / kSub;
      }
      const Phase ph = phase_at(tl, tt);
      const double iter = (ph == Phase::kTrain || ph == Phase::kEvent)
                              ? spec.iteration_amp * std::sin(2 * std::numbers::pi * tt / spec.iteration_s + iter_phase)
                              : 0.0;
      double u = 0, mu = 0, h = 1;
      switch (ph) {
        case Phase::kIdle: break;
        case Phase::kWarmupQuiet: h = 5; break;
        case Phase::kWarmupBurst: u = 40; mu = 10; h = 20; break;
        case Phase::kTrain: u = busy * (1 + iter); mu = 0.5 * busy * (1 + 2 * iter); h = 10; break;
        case Phase::kEvent:
          u = busy * (1 - depth) * (1 + iter);
          mu = spec.event_at_start ? 0.5 * busy * (1 - depth) : 0.5 * busy * (1 + 0.3 * depth);
          h = spec.event_at_start ? 10 + 40 * depth : 12;
          break;
      }
      if (spec.util_refresh_s <= 0) {
        util += u / kSub;
        mem += spec.mem_util_scale / 0.5 * mu / kSub;
      }
      host += h / kSub;
      power_target += (120 + spec.power_w_per_util * u) / kSub;
    }
    // Power follows its target with a first-order lag.
    const double step = std::max(0.0, ts - last_t);
    last_t = ts;
    power_state += (power_target - power_state) * (1 - std::exp(-step / power_tau_s));
    const bool started = ts >= spec.idle_head_s;
    const double progress = tl.train_end > tl.train_start
                                ? std::clamp((ts - tl.train_start) / (tl.train_end - tl.train_start), 0.0, 1.0)
                                : 0.0;
    if (spec.power_wander_w > 0)
      wander = wander * std::exp(-step / 2.0) +
               spec.power_wander_w * std::sqrt(1 - std::exp(-2 * step / 2.0)) * gauss(rng);
    std::array<double, 6> v{util, mem, power_state + wander, 1980, started ? 4000.0 : 900.0, host};
    for (std::size_t m = 0; m < v.size(); ++m) {
      const double sd = m == 2 && spec.power_noise_w >= 0 ? spec.power_noise_w : spec.noise * range[m];
      v[m] += sd * gauss(rng);
      if (spec.spike_rate > 0 && unit(rng) < spec.spike_rate)
        v[m] += (unit(rng) < 0.5 ? -1 : 1) * (0.3 + 0.7 * unit(rng)) * range[m];
    }
    v[1] += spec.drift * range[1] * progress;
    v[2] += spec.drift * range[2] * progress;
    for (std::size_t m : {0u, 1u}) {
      const double step_pct = spec.util_step_pct > 0 ? spec.util_step_pct : 1e-9;
      v[m] = std::clamp(std::round(v[m] / step_pct) * step_pct, 0.0, 100.0);
    }
    if (spec.util_refresh_s > 0) {  // between refreshes the driver repeats its last reading
      if (tick == held_tick) {
        v[0] = held_util;
        v[1] = held_mem;
      }
      held_tick = tick;
      held_util = v[0];
      held_mem = v[1];
    }
    v[5] = std::max(0.0, v[5]);
    v[3] = std::round(v[3] / 15) * 15;
    if (!keep[i]) continue;
    for (std::size_t m = 0; m < v.size(); ++m) ch[m]->push_back(v[m]);
  }

  if (spec.scrape_s > 0) {
    // Scrapes at a random phase, each jittered, read back on a regular grid from the first sample:
    // a grid point takes the last scrape at or before it, a scrape the last sample at or before it.
    std::vector<double> scrapes;
    const double last = tr.time_s.empty() ? 0.0 : tr.time_s.back();
    for (double s = spec.scrape_s * unit(rng); s <= last; s += spec.scrape_s)
      scrapes.push_back(s + spec.scrape_jitter_s * gauss(rng));
    std::sort(scrapes.begin(), scrapes.end());
    std::vector<double> grid_t;
    std::vector<std::size_t> pick;
    for (double g = 0; g <= last; g += spec.scrape_s) {
      const auto sc = std::upper_bound(scrapes.begin(), scrapes.end(), g);
      if (sc == scrapes.begin()) continue;  // no scrape yet: Prometheus has no value there
      const auto smp = std::upper_bound(tr.time_s.begin(), tr.time_s.end(), *(sc - 1));
      if (smp == tr.time_s.begin()) continue;
      grid_t.push_back(g);
      pick.push_back(static_cast<std::size_t>(smp - tr.time_s.begin()) - 1);
    }
    if (grid_t.empty()) throw Error(ErrorCode::kInvalidArgument, "synthetic spec: no scrape inside the trace");
    // Re-base on the first grid point, as a read-back starts there (truth follows below).
    const double g0 = grid_t.front();
    for (auto& c : tr.channels) {
      std::vector<double> v;
      v.reserve(pick.size());
      for (std::size_t j : pick) v.push_back(c.values[j]);
      c.values = std::move(v);
    }
    tr.time_s.clear();
    for (double g : grid_t) tr.time_s.push_back(g - g0);
    tr.start_unix_s += g0;
    tr.first_timestamp = fmt::format("{:.3f}", tr.start_unix_s);
    t_first_shift = g0;
  }

  out.truth.has_signature = spec.event_depth != 0 && spec.boundary_signature;
  double sum = 0;
  for (const auto& e : tl.epochs) {
    out.truth.epochs.push_back({e.start_s - t_first - t_first_shift, e.end_s - t_first - t_first_shift});
    sum += e.end_s - e.start_s;
  }
  out.truth.period_s = sum / static_cast<double>(tl.epochs.size());
  return out;
}

}  // namespace epochcast
