// The busy training region. docs/detection.md "Method" 2.
#include "busy_region.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "signal.hpp"

namespace epochcast::detail {
namespace {

// Idle is the kIdleQuantile of the activity channel, or lower the median of the first or last
// kIdleEdgeSamples samples (a job not yet / no longer running; the median: not one glitch),
// used from kIdleEdgeMinSamples samples on. Busy is its kBusyQuantile. Long runs whose
// validation dips cover more than 1 % of the samples put the 1 % quantile at the dip level.
// Guarded by LongRuns.* (200 epochs with validation on 5-20 % of the samples).
constexpr double kIdleQuantile = 0.01;
constexpr double kBusyQuantile = 0.99;
constexpr std::size_t kIdleEdgeSamples = 5;
constexpr std::size_t kIdleEdgeMinSamples = 20;
// A busy/idle contrast within this many sample-to-sample noise widths is none (then the whole
// trace is analysed). Guarded by DetectorThresholds.BusyIdleContrastOfEightNoiseWidths.
constexpr double kMinContrastNoise = 8;
// Busy above this fraction of the way from idle to busy.
// Guarded by DetectorThresholds.BusyRegionEdgesAtHalfTheContrast.
constexpr double kBusyThreshold = 0.5;
// Gaps closed inside training: up to 1/kGapOfLongest of the longest busy run (at least
// kMinGapClosed samples), or shorter than 1/kGapOfNeighbours of the busy runs on both sides (a
// validation dip deeper than the threshold). Guarded by LongRuns.* and RealTraceTarget.*
// (resnet18's CPU-loader bursts); not pinned.
constexpr std::size_t kGapOfLongest = 10;
constexpr std::size_t kMinGapClosed = 2;
constexpr std::size_t kGapOfNeighbours = 3;
// Neighbouring runs at least 1/kNeighbourShare as long as the core run, no further from it than
// its length, are joined (epochs separated by deep boundary dips); shorter ones (warm-up
// bursts) are left out. Guarded by Synthetic.* (warm-up bursts before every run); not pinned.
constexpr std::size_t kNeighbourShare = 5;

}  // namespace

Region find_training_region(Grid& grid, std::string& note) {
  std::vector<Uniform>& channels = grid.channels;
  const std::size_t n = channels.empty() ? 0 : channels.front().values.size();
  Region all{0, n};
  Uniform* activity = nullptr;
  double lo = 0, hi = 0;
  std::vector<double> sample, diffs;
  for (Metric m : kActivityChannels) {
    for (auto& c : channels) {
      if (c.metric != m) continue;
      if (c.dropped) break;
      // Levels and noise come from the block subsample, so the channel's own range check can
      // ride on the busy-run sweep below (one pass over it fewer): checked here are only the
      // values read now. A repair leaves clean readings as they are, so what is computed from
      // them stands.
      const signal::SampleLayout layout = signal::sample_layout(c.values.size());
      signal::gather(c.values, layout, sample);
      const std::size_t edge = std::min<std::size_t>(kIdleEdgeSamples, c.values.size());
      if (c.unchecked && (signal::count_outside(sample, c.lo, c.hi) > 0 ||
                          signal::count_outside(c.values.first(edge), c.lo, c.hi) > 0 ||
                          signal::count_outside(c.values.last(edge), c.lo, c.hi) > 0)) {
        grid.ensure_checked(c);
        if (!c.dropped) signal::gather(c.values, layout, sample);
      }
      if (c.dropped) break;
      if (layout.blocks == 1) c.unchecked = false;  // the sample was all of it
      // Idle and busy levels; idle may be a sliver of a long trace, hence the 1 % quantile.
      // Validation dips on more than 1 % of a long run would put that quantile at the dip
      // level, so a lower idle stretch at the head or tail (median of 5: not a glitch) wins.
      double q_lo = signal::quantile(sample, kIdleQuantile);
      if (c.values.size() >= kIdleEdgeMinSamples) {
        const auto k = static_cast<std::ptrdiff_t>(kIdleEdgeSamples);
        std::vector<double> head(c.values.begin(), c.values.begin() + k), tail(c.values.end() - k, c.values.end());
        q_lo = std::min({q_lo, signal::median(head), signal::median(tail)});
      }
      const double q_hi = signal::quantile(sample, kBusyQuantile);
      // Sample-to-sample noise: a contrast within a few noise widths is no busy/idle contrast.
      // Differences of neighbours inside each block (all of them in a short trace).
      diffs.clear();
      for (std::size_t b = 0; b < sample.size(); b += layout.block)
        for (std::size_t k = b; k + 1 < b + layout.block; ++k) diffs.push_back(std::abs(sample[k + 1] - sample[k]));
      const double noise = diffs.empty() ? 0.0 : 1.4826 * signal::median(diffs) / std::sqrt(2.0);
      if (q_hi - q_lo > std::max(kMinContrastNoise * noise, 1e-6 * (std::abs(q_hi) + 1))) {
        activity = &c;
        lo = q_lo;
        hi = q_hi;
      } else {
        grid.ensure_checked(c);  // checked now as before (its notes in the same order)
      }
      break;
    }
    if (activity) break;
  }
  if (!activity) {
    note = "no busy/idle contrast: whole trace analysed";
    return all;
  }
  const double threshold = lo + kBusyThreshold * (hi - lo);
  // Busy where the 3-sample centred mean (edges: what exists) is above the threshold; the
  // readings are range-checked in the same sweep (repaired and swept again when one is bad).
  std::vector<std::pair<std::size_t, std::size_t>> busy;
  if (activity->unchecked) {
    bool inside = true;
    busy = signal::runs_above(activity->values, threshold, activity->lo, activity->hi, inside);
    if (!inside) {
      grid.ensure_checked(*activity);
      if (activity->dropped)  // as if it had been dropped before: the next activity channel
        return find_training_region(grid, note);
      busy = signal::runs_above(activity->values, threshold);
    }
    activity->unchecked = false;
  } else {
    busy = signal::runs_above(activity->values, threshold);
  }
  struct Run {
    std::size_t begin, end;
  };
  std::vector<Run> runs;
  for (const auto& [b, e] : busy) runs.push_back({b, e});
  if (runs.empty()) return all;
  // Close short gaps (a dip of a few samples inside training).
  std::vector<Run> merged{runs.front()};
  std::size_t longest_raw = 0;
  for (const auto& r : runs) longest_raw = std::max(longest_raw, r.end - r.begin);
  const std::size_t small_gap = std::max<std::size_t>(kMinGapClosed, longest_raw / kGapOfLongest);
  for (std::size_t k = 1; k < runs.size(); ++k) {
    // Also a gap shorter than a third of the busy runs on both sides: a validation dip deeper
    // than the threshold. Gaps relative to the longest run alone leave, over hundreds of epochs,
    // some dips closed and some not, and the longest merged run then outgrows its neighbours.
    const std::size_t gap = runs[k].begin - merged.back().end;
    const std::size_t shorter = std::min(merged.back().end - merged.back().begin, runs[k].end - runs[k].begin);
    if (gap <= small_gap || kGapOfNeighbours * gap <= shorter) {
      merged.back().end = runs[k].end;
    } else {
      merged.push_back(runs[k]);
    }
  }
  std::size_t best = 0;
  for (std::size_t k = 1; k < merged.size(); ++k)
    if (merged[k].end - merged[k].begin > merged[best].end - merged[best].begin) best = k;
  const std::size_t core = merged[best].end - merged[best].begin;
  Region region{merged[best].begin, merged[best].end};
  // Extend over substantial neighbours (epochs separated by deep boundary dips).
  for (std::size_t k = best; k-- > 0;) {
    const std::size_t len = merged[k].end - merged[k].begin;
    if (len * kNeighbourShare >= core && region.begin - merged[k].end <= core) {
      region.begin = merged[k].begin;
    } else {
      break;
    }
  }
  for (std::size_t k = best + 1; k < merged.size(); ++k) {
    const std::size_t len = merged[k].end - merged[k].begin;
    if (len * kNeighbourShare >= core && merged[k].begin - region.end <= core) {
      region.end = merged[k].end;
    } else {
      break;
    }
  }
  return region;
}

}  // namespace epochcast::detail
