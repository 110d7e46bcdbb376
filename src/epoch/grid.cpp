// Every usable channel on one uniform grid. docs/detection.md "Method" 1.
#include "grid.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "signal.hpp"

namespace epochcast::detail {

std::string with_notes(std::string reason, const std::vector<std::string>& notes) {
  for (const auto& note : notes) reason += "; " + note;
  return reason;
}

void Grid::repair(Uniform& u) {
  const Channel* ch = trace->find(u.metric);
  std::vector<double> values;
  values.reserve(n_raw);
  std::size_t absurd = 0, missing = 0;
  for (double v : ch->values) {
    const bool finite = std::isfinite(v);
    const bool implausible = finite && (v < u.lo || v > u.hi);
    absurd += implausible;
    missing += !finite || implausible;
    values.push_back(implausible ? kNaN : v);
  }
  u.storage = on_grid ? std::move(values) : signal::resample_uniform(trace->time_s, values, dt, n);
  u.absurd = absurd;
  if (missing > 0 || !on_grid) u.missing_fraction = signal::fill_gaps(u.storage);
  u.values = u.storage;
  u.unchecked = false;
  const auto tag = std::string(info(u.metric).tag);
  if (absurd > 0) notes.push_back(fmt::format("{} implausible {} values ignored", absurd, tag));
  if (u.missing_fraction > kMaxMissingFraction) {
    notes.push_back(fmt::format("{} dropped: {:.0f} % missing", tag, 100 * u.missing_fraction));
    u.dropped = true;
  }
}

void Grid::ensure_checked(Uniform& u) {
  if (!u.unchecked) return;
  if (signal::count_outside(u.values, u.lo, u.hi) > 0) repair(u);
  u.unchecked = false;
}

bool Grid::none_usable() {
  bool any = false;
  for (auto& u : channels) {
    ensure_checked(u);
    any = any || !u.dropped;
  }
  return !any;
}

bool build_grid(const Trace& trace, const std::vector<Metric>& left_out, Grid& grid, Segmentation& seg) {
  seg.first_timestamp = trace.first_timestamp;
  grid.trace = &trace;
  const std::size_t n_raw = trace.size();
  grid.n_raw = n_raw;
  if (n_raw < kMinSamples) {
    seg.reason = fmt::format("trace too short: {} samples (need at least {})", n_raw, kMinSamples);
    return false;
  }
  // Median interval from at most 16384 intervals in evenly spread blocks (exact for short
  // traces); the timestamps are checked in the same sweep that tests whether they already sit
  // on the grid.
  double dt = 0;
  {
    const signal::SampleLayout layout = signal::sample_layout(n_raw - 1);
    std::vector<double> diffs;
    diffs.reserve(layout.size());
    const double* t = trace.time_s.data();
    for (std::size_t j = 0; j < layout.blocks; ++j) {
      if (j + 8 < layout.blocks) {  // blocks are not guessed; 17 values span two or three lines
        __builtin_prefetch(t + layout.start(j + 8));
        __builtin_prefetch(t + layout.start(j + 8) + layout.block);
      }
      for (std::size_t i = layout.start(j) + 1, e = i + layout.block; i < e; ++i) {
        const double d = t[i] - t[i - 1];
        if (std::isfinite(d)) diffs.push_back(d);  // NaN would upset the median; reported below
      }
    }
    dt = diffs.empty() ? 0.0 : signal::median(diffs);
  }
  bool on_grid = false;
  if (const std::size_t i = signal::check_timestamps(trace.time_s, dt, kOnGridTolerance * dt, on_grid); i < n_raw) {
    seg.reason = fmt::format("timestamps not increasing at sample {}", i + 1);
    return false;
  }
  seg.interval_s = dt;
  grid.dt = dt;
  if (!(dt > 0)) {
    seg.reason = "no sampling interval: all samples share one timestamp";
    return false;
  }
  const double span_samples = trace.duration_s() / dt;
  if (!(span_samples < static_cast<double>(kMaxUniformSamples))) {
    seg.reason = fmt::format("trace spans {:.0f} intervals of {:.3g} s: too long to analyse", span_samples, dt);
    return false;
  }
  const auto n = static_cast<std::size_t>(std::floor(span_samples + 0.5)) + 1;
  grid.n = n;
  // A resampled sample fills at most 3 grid points, so on a grid over 8x the samples every
  // channel is > 50 % missing and would be dropped below: say so before building that grid
  // (fuzzing: a 121-row log with a 65-day clock step back and forth built a 56 M-point grid).
  if (n > kGapGridRatio * n_raw + kGapGridSlack) {
    seg.reason = fmt::format("trace is mostly gaps: {} samples over {:.0f} intervals of {:.3g} s", n_raw,
                             span_samples, dt);
    return false;
  }

  // Already on the grid (the common case for one collector): values are used as they are.
  grid.on_grid = on_grid && n == n_raw;

  // Usable channels on a uniform grid; absurd values and gaps counted. On the grid the trace's
  // own values are used in place and checked where they are first read in full.
  for (const MetricInfo& row : metric_table()) {
    if (!row.may_carry_epochs) continue;
    const Metric usable = row.id;
    if (std::find(left_out.begin(), left_out.end(), usable) != left_out.end()) continue;
    const Channel* ch = trace.find(usable);
    if (!ch || ch->values.size() != n_raw) continue;
    Uniform u;
    u.metric = usable;
    u.lo = info(usable).min_value;
    u.hi = info(usable).max_value;
    if (grid.on_grid) {
      u.values = ch->values;
      u.unchecked = true;
    } else {
      grid.repair(u);
      if (u.dropped) continue;
    }
    grid.channels.push_back(std::move(u));
  }
  if (grid.channels.empty()) {
    seg.reason = with_notes(kNoUsableChannel, grid.notes);
    return false;
  }
  return true;
}

}  // namespace epochcast::detail
