// The whole-region search on the grid's channels. docs/detection.md "Whole-region search".
#include "region_proposer.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "region_search.hpp"

namespace epochcast::detail {

std::atomic<bool> g_region_arbitration{true};

namespace {

// The search runs on the finest pyramid level with at most this many samples: its cost
// (surrogates x periods x samples) stays bounded whatever the trace length.
constexpr std::size_t kRegionLevelMax = 512;
// Shortest period it tests, in level samples: the boundary slack (15 %) must be >= 1 sample.
constexpr double kRegionMinPeriod = 6;
// When the other proposers found no period but their candidate is shorter than this many level
// samples (a 100-epoch run on 512 samples: ~5), the search steps to finer levels, up to
// kRegionLevelMaxFine samples, so that it can test the candidate at all (twice the shortest
// period: the slack is then ~2 samples). Guarded by ChainedRuns.* and the eval-long bench.
constexpr double kRegionFinePeriod = 2 * kRegionMinPeriod;
constexpr std::size_t kRegionLevelMaxFine = 2048;
// Phase-randomised surrogates: with none scoring as well, p = 1/100 (kRegionAlpha, arbitration.cpp).
constexpr int kRegionSurrogates = 99;
// Block-scrambled copies: with none scoring as well, p = 1/20 (kRegionBlockAlpha).
constexpr int kRegionBlockSurrogates = 19;
// Fewer level samples than this: nothing to search.
constexpr std::size_t kRegionMinLevelSamples = 16;
// The search needs 2 inner boundaries: a period the region holds fewer than this many times
// (3 epochs less slack) it cannot test.
constexpr double kRegionMinEpochs = 2.8;

}  // namespace

RegionProposal propose_by_region_search(const ProposerInput& in, const Analysis& an, const Segmentation& e) {
  using Kind = RegionProposal::Kind;
  RegionProposal out;
  const double dt = in.grid.dt;
  const Region region = in.region;
  if (!g_region_arbitration.load(std::memory_order_relaxed)) {
    out.kind = Kind::kOff;
    return out;
  }
  if (an.metrics.empty() || an.level_len.empty() || !(dt > 0)) return out;
  std::size_t l = 0;
  while (l + 1 < an.levels() && an.level_len[l] > kRegionLevelMax) ++l;
  if (!e.found && e.candidate_period_s > 0)
    while (l > 0 && an.level_len[l - 1] <= kRegionLevelMaxFine &&
           e.candidate_period_s / dt / std::ldexp(1.0, static_cast<int>(l)) < kRegionFinePeriod)
      --l;
  const double scale = std::ldexp(1.0, static_cast<int>(l));
  const double p_lo = std::max(kRegionMinPeriod, in.min_lag / scale);
  const double e_period_level = (e.found ? e.period_s : e.candidate_period_s) / dt / scale;
  // More epochs than the level resolves: the autocorrelation's ground (hundreds of epochs).
  if (e.found && e_period_level < p_lo) {
    out.kind = Kind::kTooManyEpochs;
    return out;
  }
  if (an.level_len[l] < kRegionMinLevelSamples) return out;
  // Fewer than 3 epochs (only with --min-epochs lowered): the search needs 2 inner boundaries.
  if (e.found && e_period_level > 0 && static_cast<double>(an.level_len[l]) / e_period_level < kRegionMinEpochs) {
    out.kind = Kind::kTooFewEpochs;
    return out;
  }
  std::vector<std::span<const double>> ch;
  // The channels' own readings over the region (not the clipped z-scores: a validation bump of
  // 8 reading steps on 1-step flicker is 8:1 there, 4:2 after the clip), averaged into blocks of
  // the level's 2^l samples; the search is scale-free per channel.
  const std::size_t block = std::size_t{1} << l, len = an.level_len[l];
  std::vector<std::vector<double>> raw;
  for (Metric m : an.metrics)
    for (const auto& u : in.grid.channels) {
      if (u.metric != m || u.dropped) continue;
      const auto v = u.values.subspan(region.begin, region.size());
      std::vector<double> r(len, 0.0);
      for (std::size_t i = 0; i < len; ++i) {
        double acc = 0;
        for (std::size_t j = i * block; j < std::min(v.size(), (i + 1) * block); ++j) acc += v[j];
        r[i] = acc / static_cast<double>(block);
      }
      raw.push_back(std::move(r));
      break;
    }
  if (raw.size() != an.metrics.size()) {
    raw.clear();
    for (std::size_t c = 0; c < an.metrics.size(); ++c) raw.emplace_back(an.level(c, l).begin(), an.level(c, l).end());
  }
  for (const auto& r : raw) ch.emplace_back(r);
  RegionSearchOptions o;
  o.min_period = p_lo;
  o.max_period = in.max_lag > 0 ? in.max_lag / scale : 0;
  o.min_epochs = std::max(2.0, static_cast<double>(in.options.min_epochs));
  o.idle_before = in.idle_before();
  o.idle_after = in.idle_after();
  o.surrogates = kRegionSurrogates;
  o.block_surrogates = kRegionBlockSurrogates;
  o.agree_period = e.found ? e.period_s / dt / scale : 0;
  o.agree_tolerance = kRegionAgree;
  RegionSearchResult H = region_search(ch, o);
  // Second stage: the boundary chain, when the even grid beats neither null (boundaries that
  // wander with the epochs' own variation). Its own nulls at the same alphas: a run without
  // epoch structure passes one stage or the other with at most twice the grid's rate. Not when
  // the grid's best already lands on the period the others found (the arbitration's agreeing
  // class decides; the chain could only raise 0.90 to 0.95 there, at twice the search's cost:
  // resnet50's shared trace 25 -> 51 ms per detect).
  const bool grid_agrees = H.ok && o.agree_period > 0 && std::abs(o.agree_period - H.period_samples) <= kRegionAgree * H.period_samples;
  const auto beats_both = [](const RegionSearchResult& r) {
    return r.ok && r.p_value <= kRegionAlpha && r.p_block <= kRegionBlockAlpha;
  };
  // The grid beats its nulls at m >= 2 of the others' period (or best guess): over many
  // wandering epochs an even grid at P drifts off the boundaries while one at m P (half the
  // boundaries, twice the slack in samples) still fits; the chain then looks within kRegionAgree
  // of theirs. 100-epoch vgg16 and effnetb0 chains: the grid at 2 P, the ACF's guess at P.
  const double theirs = e_period_level;
  const double multiple = H.ok && theirs > 0 ? std::round(H.period_samples / theirs) : 0;
  const bool grid_at_multiple = beats_both(H) && multiple >= 2 &&
                                std::abs(H.period_samples - multiple * theirs) <= kRegionAgree * H.period_samples &&
                                theirs * (1 - kRegionAgree) >= p_lo;
  if (!beats_both(H) && !grid_agrees) {
    o.chain = true;
    RegionSearchResult C = region_search(ch, o);
    if (beats_both(C)) H = std::move(C);
  } else if (grid_at_multiple) {
    o.chain = true;
    o.min_period = theirs * (1 - kRegionAgree);
    o.max_period = theirs * (1 + kRegionAgree);
    RegionSearchResult C = region_search(ch, o);
    if (beats_both(C)) {
      H = std::move(C);
      out.grid_multiple = static_cast<std::size_t>(multiple);
    }
  }
  out.kind = Kind::kRun;
  out.both_edges = o.idle_before && o.idle_after;
  PeriodHypothesis& h = out.h;
  h.ok = H.ok;
  h.why = H.why;
  if (!H.ok) return out;
  h.period_samples = H.period_samples * scale;
  h.epochs = H.epochs;
  h.p_value = H.p_value;
  h.p_phase = H.p_phase;
  h.p_block = H.p_block;
  h.p_tail = H.p_tail;
  h.channels = an.metrics;
  h.evidence = H.evidence;
  // Level sample i stands for grid samples [i * block, (i + 1) * block): its centre.
  for (double b : H.boundaries)
    h.boundaries_s.push_back((static_cast<double>(region.begin) + (b + 0.5) * scale - 0.5) * dt);
  return out;
}

}  // namespace epochcast::detail
