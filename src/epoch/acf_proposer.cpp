// The autocorrelation proposer: period, matched boundaries, confidence. docs/detection.md "Method" 4-8.
#include "acf_proposer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "acf_periods.hpp"
#include "boundary_match.hpp"
#include "flicker.hpp"

namespace epochcast::detail {
namespace {

// Below this share of the voting evidence (ACF^2) from channels whose epoch profile spans two
// reading steps, the signature is called quantisation flicker (and the flicker channels are
// looked for). Guarded by RealTraceNoSignature.AbstainsOrIsRight, RealTraceResampled.TwoLevelClockDoesNotOutvoteTheEpochs and ScrapeAliasing.*.
constexpr double kResolvedShare = 0.5;
// Evidence weight of the unresolved share: confidence x (kFlickerFloor + (1 - kFlickerFloor) x
// resolved share). Guarded by RealTraceNoSignature.AbstainsOrIsRight (mobilenetv2: 2.6 s flicker).
constexpr double kFlickerFloor = 0.2;
// A channel votes (and its evidence counts) when its ACF at the period is at least this.
// Guarded by RealTraceTarget.* (the voting channels in the reason and JSON goldens).
constexpr double kVoteAcf = 0.15;
// Half-period check: the half period is kept when at least kHalfInliers of its boundaries line
// up (or within kHalfInlierSlack of the full period's share) with jitter at most kHalfJitter or
// kHalfJitterRatio x the full period's. Removed the synthetic set's last period doublings
// (worst error 99 % -> 2.5 %). Guarded by Synthetic.*.
constexpr double kHalfInliers = 0.8;
constexpr double kHalfInlierSlack = 0.05;
constexpr double kHalfJitter = 0.05;
constexpr double kHalfJitterRatio = 2;
// The boundary line's period replaces the ACF's when at least 3 boundaries matched and it is
// within this fraction of it (a line through a few mismatches can be far off).
constexpr double kFitPeriodAgree = 0.1;
// An idle edge kEdgeWindow (fraction of a period) or less from one period before the first /
// after the last boundary is a boundary too; within kEdgeConfirms it also counts as a delimiting
// boundary (the chain's tolerance). Guarded by RealTraceTarget.* (vgg16, resnet50 epochs from the edges).
constexpr double kEdgeWindow = 0.3;
constexpr double kEdgeConfirms = 0.1;
// Confidence factors: s_acf = (rho - kAcfFloor) / kAcfSpan (the noise floor of a combined ACF,
// and the rise to full credit); s_reg = sqrt(1 - jitter / kMaxJitter) (real epochs jitter 0-12 %;
// 8 % rms of boundary residual is no grid); matched share weighted kMatchWeight.
// Guarded by LaunchBound.FewEpochNullFindsAreRare and NullSuite.* (null-find rates).
constexpr double kAcfFloor = 0.05;
constexpr double kAcfSpan = 0.3;
constexpr double kMaxJitter = 0.08;
constexpr double kMatchWeight = 0.75;

}  // namespace

AcfProposal propose_by_acf(const ProposerInput& in, Analysis& an, std::vector<std::string>& notes,
                           bool look_for_flicker) {
  AcfProposal out;
  PeriodHypothesis& h = out.h;
  const Region region = in.region;
  const double dt = in.grid.dt, min_lag = in.min_lag;
  const std::size_t n = in.grid.n;
  const Trace& trace = *in.grid.trace;
  const auto& channels = in.grid.channels;
  const DetectOptions& options = in.options;
  const auto candidates = propose_periods(an, in.min_lag, in.max_lag);
  if (candidates.empty()) return out;
  const Candidate chosen = choose_period(an, candidates);

  // Boundaries.
  Refined ref = refine_period(an, chosen);
  BoundaryFit fit = locate_boundaries(an, ref);
  if (fit.signature_repeats_at_half && ref.period_samples / 2 >= min_lag) {
    // Try half the period; keep it when its boundaries line up at least as well.
    Candidate half = chosen;
    half.period_samples = ref.period_samples / 2;
    half.level = std::max(0, chosen.level - 1);
    const Refined ref_half = refine_period(an, half);
    BoundaryFit fit_half = locate_boundaries(an, ref_half);
    if (fit_half.matched >= 3 &&
        fit_half.inlier_fraction >= std::max(kHalfInliers, fit.inlier_fraction - kHalfInlierSlack) &&
        fit_half.jitter <= std::max(kHalfJitter, kHalfJitterRatio * fit.jitter)) {
      ref = ref_half;
      fit = std::move(fit_half);
      notes.push_back("half of the first period found (its signature repeated half-way)");
    }
  }
  double period_samples = ref.period_samples;
  if (fit.matched >= 3 && std::abs(fit.period_samples - ref.period_samples) < kFitPeriodAgree * ref.period_samples)
    period_samples = fit.period_samples;

  std::vector<double> bounds_s;
  for (double idx : fit.boundaries) bounds_s.push_back((static_cast<double>(region.begin) + idx) * dt);
  const double period_s = period_samples * dt;
  // The busy region's edges are epoch boundaries when the trace shows idle before/after.
  // An edge one period (+-10 %, the chain's tolerance) from a matched boundary also confirms it.
  int edges_confirming = 0;
  if (!bounds_s.empty() && region.begin > 0) {
    const double gap = bounds_s.front() - in.start_s();
    if (gap > (1 - kEdgeWindow) * period_s && gap < (1 + kEdgeWindow) * period_s)
      bounds_s.insert(bounds_s.begin(), in.start_s());
    edges_confirming += std::abs(gap - period_s) <= kEdgeConfirms * period_s;
  }
  if (!bounds_s.empty() && region.end < n) {
    const double gap = in.end_s() - bounds_s.back();
    if (gap > (1 - kEdgeWindow) * period_s && gap < (1 + kEdgeWindow) * period_s) bounds_s.push_back(in.end_s());
    edges_confirming += std::abs(gap - period_s) <= kEdgeConfirms * period_s;
  }

  // Confidence: periodicity strength x boundary regularity x matched fraction x cycles.
  const double cycles = static_cast<double>(region.size()) / period_samples;
  const double lag_fraction = std::min(0.9, period_samples / static_cast<double>(region.size()));
  const double rho = ref.score / (1.0 - lag_fraction);  // undo the biased estimator's taper
  const double s_acf = clamp01((rho - kAcfFloor) / kAcfSpan);
  const double s_reg = std::sqrt(clamp01(1.0 - fit.jitter / kMaxJitter));
  const double s_match = clamp01(fit.inlier_fraction);
  // Epochs counted by the boundaries seen, not by the region's length: with the template folded
  // from the same 3-4 epochs, "3/3 boundaries match" is nearly automatic on random bumps, so
  // an epoch counts only when matched boundaries (or a confirming idle edge) close it on both
  // sides (detect_bench --null: 17 -> 10 of 500 null runs found; docs/detection.md). The
  // factor is 0.5 at 2 epochs, 1 from 3; one epoch alone repeats nothing: 0.
  const double delimited = static_cast<double>(fit.matched) - 1.0 + edges_confirming;
  const double f_cycles = std::clamp(0.5 * (std::min(cycles, delimited) - 1.0), 0.0, 1.0);
  double confidence = clamp01(s_acf * s_reg * ((1 - kMatchWeight) + kMatchWeight * s_match) * f_cycles);

  // Channels that vote: periodic at this period. Evidence counts by ACF^2, and only from
  // channels whose signature goes beyond reading flicker.
  double evidence = 0, resolved_evidence = 0;
  FoldRuns fold_runs;  // the channels' flicker profiles share one window length and period
  for (std::size_t c = 0; c < an.metrics.size(); ++c) {
    if (ref.per_channel.empty() || ref.per_channel[c] < kVoteAcf) continue;
    h.channels.push_back(an.metrics[c]);
    const double e = ref.per_channel[c] * ref.per_channel[c];
    evidence += e;
    for (const auto& u : channels) {
      if (u.metric != an.metrics[c]) continue;
      const auto raw = u.values.subspan(region.begin, region.size());
      const Channel* original = trace.find(u.metric);
      const std::span<const double> readings = original ? std::span<const double>(original->values) : raw;
      if (profile_resolved(raw, readings, period_samples, fold_runs)) resolved_evidence += e;
    }
  }

  const double resolved = evidence > 0 ? resolved_evidence / evidence : 0.0;
  // A clock stepping 1980 <-> 1965 MHz now and then, resampled (a Prometheus scrape of a
  // collector), can outvote the channels that carry the epochs: the caller looks again without
  // such channels, once (detect.cpp, the second round).
  if (resolved < kResolvedShare && look_for_flicker)
    for (const auto& u : channels) {
      const Channel* original = trace.find(u.metric);
      if (original && toggles_between_two_readings(u.values.subspan(region.begin, region.size()), original->values))
        out.flicker.push_back(u.metric);
    }
  confidence *= kFlickerFloor + (1 - kFlickerFloor) * resolved;
  if (resolved < kResolvedShare)
    notes.push_back("the periodic signature is mostly within one reading step (quantisation flicker)");

  std::string how = fmt::format(
      "period {:.1f} samples; autocorrelation {:.2f}, {}/{} boundaries match{} (jitter {:.1f} %), "
      "{:.1f} epochs in view",
      period_samples, rho, fit.matched,
      fit.stride > 1 ? fit.searched : std::max<std::size_t>(fit.boundaries.size(), fit.matched),
      fit.stride > 1 ? fmt::format(" (1 in {} searched)", fit.stride) : std::string(), 100 * fit.jitter, cycles);
  if (delimited < cycles && delimited < 3)
    how += fmt::format(", {:.0f} between matched boundaries", std::max(0.0, delimited));
  const double min_cycles = min_epochs_in_view(options);
  // Resolution: the matched boundaries must span at least kMinSpanSamples, so that an error of
  // one sample in their positions stays within 3 % of the period (a few epochs of ~10 samples
  // each cannot pin the period down, however cleanly three boundaries line up).
  const double matched_span = (static_cast<double>(fit.matched) - 1.0) * period_samples;
  const bool resolved_span = matched_span >= kMinSpanSamples;
  // The confidence says so too: (span / required span)^2 below it.
  if (!resolved_span) confidence *= std::pow(clamp01(matched_span / kMinSpanSamples), 2);
  if (!resolved_span && cycles >= min_cycles && confidence >= options.min_confidence)
    notes.push_back(fmt::format("{} matched boundaries span {:.0f} samples: too few to resolve the period to 3 %",
                                fit.matched, matched_span));
  h.ok = true;
  h.period_samples = period_samples;
  h.boundaries_s = std::move(bounds_s);
  h.confidence = confidence;
  h.epochs = cycles;
  h.why = std::move(how);
  out.resolved_span = resolved_span;
  return out;
}

}  // namespace epochcast::detail
