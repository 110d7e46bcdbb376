// The autocorrelation's period candidates and their choice. docs/detection.md "Method" 4-5.
#include "acf_periods.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace epochcast::detail {

std::atomic<bool> g_acf_level_skip{true};  // written by tests only; atomic as the server detects on several threads
thread_local std::size_t t_skipped_acf_levels = 0;

namespace {

// Each level searches lags [kLevelLagLo, kLevelLagHi): 8 to 16 samples per period on every
// level, so 8 or 100,000 samples per epoch cost the same. Guarded by Synthetic.* and
// LongRuns.* (every period from 8 samples to minutes at 10 Hz).
constexpr double kLevelLagLo = 8;
constexpr double kLevelLagHi = 16;
// A local peak of the combined ACF below this is no candidate.
constexpr double kMinPeakAcf = 0.02;
// Rule (a), period doubling: a candidate 2-4x shorter than the best, scoring at least
// kConsidered of it, wins when its ACF compared on its own level is at least kShorterWins of
// the longer one's. Guarded by Synthetic.* and LongRuns.OneHertzMinutesLongEpochsNotAMultiple.
constexpr double kConsidered = 0.5;
constexpr double kShorterWins = 0.9;
// Rule (b), nested periods: a candidate over kMuchLonger x the best that is no harmonic (within
// kHarmonicTolerance up to 4x: epoch jitter blurs the multiple; kFarHarmonicTolerance beyond)
// and scores at least kLongerWins of it on the best one's level is the epoch.
// Guarded by LongRuns.* (270 s and 300 s epochs at 1 Hz, 24 h slice).
constexpr double kMuchLonger = 1.5;
constexpr double kHarmonicTolerance = 0.10;
constexpr double kFarHarmonicTolerance = 0.02;
constexpr double kLongerWins = 0.8;
// Levels bracket the period when the next level's longest lag x this is below the shortest
// strong peak: P's 2-4x shorter harmonics (10 % included) stay searched. Guarded by AcfLevelSkip.*.
constexpr double kBracketReach = 4.4;
struct LevelRange {
  std::size_t lo, hi;  // accepted peak lags [lo, hi) in level samples
};

LevelRange level_range(std::size_t level, std::size_t levels, std::size_t len,
                       double min_lag_samples, double max_lag_samples) {
  const double scale = std::ldexp(1.0, static_cast<int>(level));
  double lo = level == 0 ? std::min(kLevelLagLo, min_lag_samples) : kLevelLagLo;
  lo = std::max(lo, min_lag_samples / scale);
  double hi = (level + 1 == levels) ? static_cast<double>(len) / 2.0 + 1 : kLevelLagHi;
  hi = std::min(hi, static_cast<double>(len) / 2.0 + 1);
  if (max_lag_samples > 0) hi = std::min(hi, max_lag_samples / scale + 1);
  lo = std::max(lo, 2.0);
  return {static_cast<std::size_t>(std::ceil(lo)), static_cast<std::size_t>(std::max(0.0, std::ceil(hi)))};
}

// Local peaks of the weighted combined ACF on levels [from, levels), as periods in original
// samples; the weights are the channels' best peaks on those levels.
std::vector<Candidate> combined_peaks(Analysis& an, const std::vector<std::vector<std::vector<double>>>& per_level,
                                      const std::vector<LevelRange>& ranges,
                                      const std::vector<double>& best_peak, std::size_t from) {
  std::vector<Candidate> out;
  const std::size_t levels = an.levels();
  an.weight.resize(an.metrics.size());
  for (std::size_t c = 0; c < an.metrics.size(); ++c) an.weight[c] = best_peak[c] * best_peak[c];
  const double wsum = std::accumulate(an.weight.begin(), an.weight.end(), 0.0);
  if (!(wsum > 0)) return out;
  for (std::size_t l = from; l < levels; ++l) {
    if (ranges[l].hi <= ranges[l].lo || per_level[l].empty()) continue;
    const std::size_t len = an.level_len[l];
    const std::size_t lo = ranges[l].lo >= 3 ? ranges[l].lo - 2 : 1;
    const std::size_t hi = std::min(ranges[l].hi + 1, len - 1);
    std::vector<double> total(hi - lo + 1, 0.0);
    for (std::size_t c = 0; c < an.metrics.size(); ++c) {
      const auto& r = per_level[l][c];
      for (std::size_t k = 0; k < r.size() && k < total.size(); ++k)
        total[k] += an.weight[c] * r[k] / wsum;
    }
    const double scale = std::ldexp(1.0, static_cast<int>(l));
    for (std::size_t k = ranges[l].lo; k < ranges[l].hi; ++k) {
      const std::size_t i = k - lo;
      if (i == 0 || i + 1 >= total.size()) continue;
      if (total[i] > total[i - 1] && total[i] >= total[i + 1] && total[i] > kMinPeakAcf) {
        const double off = signal::parabolic_offset(total[i - 1], total[i], total[i + 1]);
        out.push_back({(static_cast<double>(k) + off) * scale, total[i], static_cast<int>(l)});
      }
    }
  }
  return out;
}

// Whether level `next` and those below are beyond the bracket of the levels done so far. P:
// the shortest peak at >= 0.5 of the strongest one's score (as short as choose_period's rule
// (a) could go from there); beyond: the level cannot propose a period within rule (a)'s reach
// of P (>= P / 4.4, the 4x harmonic with its 10 %), so levels L-1 and L-2 of P's are kept.
bool period_bracketed(const std::vector<Candidate>& cands, std::size_t next) {
  if (cands.empty()) return false;
  double best = 0;
  for (const auto& c : cands) best = std::max(best, c.score);
  double shortest = kInf;
  for (const auto& c : cands)
    if (c.score >= kConsidered * best) shortest = std::min(shortest, c.period_samples);
  return kLevelLagHi * std::ldexp(1.0, static_cast<int>(next)) * kBracketReach < shortest;
}

// Samples of the centred probe window: 1/8 of the ACF window (>= 128 periods of lag 16).
constexpr std::size_t kProbeWindow = kAcfWindow / 8;
// Probe noise allowance: an ACF estimate from 2,048 samples is within ~0.05 of the full one.
constexpr double kProbeMargin = 0.1;

// Whether a level beyond the bracket still has to be computed in full: on a probe (the centred
// kProbeWindow samples of its ACF window, same lags and high-pass) a channel comes within
// kProbeMargin of its best peak so far (its weight could grow), or the weighted combination
// has a peak within kProbeMargin of half the strongest score (a candidate rule (a) or the
// choice could take: a short period averaged away on the coarse levels, whose multiples
// therefore never showed there).
bool probe_needs_level(const Analysis& an, std::size_t level, const LevelRange& range, std::size_t lo,
                       std::size_t hi, bool high_pass, const std::vector<double>& best_peak, double top) {
  std::vector<double> total(hi - lo + 1, 0.0), r;
  signal::Buffer work;
  double wsum = 0;
  for (std::size_t c = 0; c < an.metrics.size(); ++c) {
    if (level >= an.pyramid[c].levels.size()) continue;
    auto w = an.window(c, level, kAcfWindow);
    if (w.size() > kProbeWindow) w = w.subspan((w.size() - kProbeWindow) / 2, kProbeWindow);
    const std::size_t width = high_pass && 4 * hi >= 3 && w.size() >= 8 * hi ? 4 * hi : 0;
    signal::centred_autocorrelation(w, width, lo, hi, work, r);
    for (std::size_t k = range.lo; k < range.hi && k + 1 <= hi; ++k) {
      const std::size_t i = k - lo;
      if (i == 0 || i + 1 >= r.size()) continue;
      if (r[i] > r[i - 1] && r[i] >= r[i + 1] && r[i] >= best_peak[c] - kProbeMargin) return true;
    }
    const double wc = best_peak[c] * best_peak[c];
    wsum += wc;
    for (std::size_t k = 0; k < r.size() && k < total.size(); ++k) total[k] += wc * r[k];
  }
  if (!(wsum > 0)) return true;
  for (std::size_t k = range.lo; k < range.hi; ++k) {
    const std::size_t i = k - lo;
    if (i == 0 || i + 1 >= total.size()) continue;
    if (total[i] > total[i - 1] && total[i] >= total[i + 1] &&
        total[i] / wsum >= kConsidered * top - kProbeMargin)
      return true;
  }
  return false;
}

}  // namespace


// Local ACF peaks on every level needed, as periods in original samples.
std::vector<Candidate> propose_periods(Analysis& an, double min_lag, double max_lag) {
  const std::size_t levels = an.levels();
  // Pass 1, coarse to fine: per-channel peak heights give the channel weights (noise channels
  // fade out). Levels beyond the coarse levels' bracket (see period_bracketed) are computed
  // only when a probe on 1/8 of the window says they could matter: on a long trace the fine
  // levels hold ~80 % of the ACF work and usually propose nothing that counts.
  std::vector<double> best_peak(an.metrics.size(), 0.0);
  std::vector<std::vector<std::vector<double>>> per_level(levels);
  std::vector<LevelRange> ranges(levels);
  for (std::size_t l = 0; l < levels; ++l)
    ranges[l] = level_range(l, levels, an.level_len[l], min_lag, max_lag);
  bool bracketed = false;
  double top = 0;
  std::size_t skipped = 0;
  for (std::size_t l = levels; l-- > 0;) {
    if (ranges[l].hi <= ranges[l].lo) continue;
    const std::size_t len = an.level_len[l];
    const std::size_t lo = ranges[l].lo >= 3 ? ranges[l].lo - 2 : 1;
    const std::size_t hi = std::min(ranges[l].hi + 1, len - 1);
    if (bracketed && !probe_needs_level(an, l, ranges[l], lo, hi, l + 1 < levels, best_peak, top)) {
      ++skipped;
      continue;
    }
    an.weight.clear();
    combined_acf(an, l, lo, hi, l + 1 < levels, &per_level[l]);
    for (std::size_t c = 0; c < an.metrics.size(); ++c) {
      const auto& r = per_level[l][c];
      for (std::size_t k = ranges[l].lo; k < ranges[l].hi && k + 1 <= hi; ++k) {
        const std::size_t i = k - lo;
        if (i == 0 || i + 1 >= r.size()) continue;
        if (r[i] > r[i - 1] && r[i] >= r[i + 1]) best_peak[c] = std::max(best_peak[c], r[i]);
      }
    }
    if (l > 0 && g_acf_level_skip.load(std::memory_order_relaxed)) {
      const auto cands = combined_peaks(an, per_level, ranges, best_peak, l);
      bracketed = period_bracketed(cands, l - 1);
      top = 0;
      for (const auto& c : cands) top = std::max(top, c.score);
    }
  }
  t_skipped_acf_levels = skipped;
  // Pass 2: the weighted combination, its local peaks.
  return combined_peaks(an, per_level, ranges, best_peak, 0);
}

namespace {

// Weighted combined ACF at one (fractional) lag on one level: the best of the integer lags
// around it. Used to compare candidates found on different levels on equal terms (a coarser
// level averages noise away and would otherwise win).
double acf_at(const Analysis& an, std::size_t level, double lag) {
  const auto lo = static_cast<std::size_t>(std::max(1.0, std::floor(lag - 1)));
  const auto hi = static_cast<std::size_t>(std::ceil(lag + 1));
  const std::size_t len = an.level_len[level];
  if (hi + 2 >= len) return 0.0;
  const auto total = combined_acf(an, level, lo, hi, false, nullptr, len);
  return total.empty() ? 0.0 : *std::max_element(total.begin(), total.end());
}

// Weighted combined ACF on one level: its maximum over the lags within `half_width` original
// samples (plus one level sample) of `period` (in original samples).
double acf_peak_near(const Analysis& an, std::size_t level, double period, double half_width) {
  const double scale = std::ldexp(1.0, static_cast<int>(level));
  const auto lo = static_cast<std::size_t>(std::max(1.0, std::floor((period - half_width) / scale - 1)));
  const auto hi = static_cast<std::size_t>(std::ceil((period + half_width) / scale + 1));
  const std::size_t len = an.level_len[level];
  if (hi + 2 >= len || hi < lo) return 0.0;
  const auto total = combined_acf(an, level, lo, hi, false);
  return total.empty() ? 0.0 : *std::max_element(total.begin(), total.end());
}

}  // namespace

Candidate choose_period(const Analysis& an, const std::vector<Candidate>& candidates) {
  Candidate best = candidates.front();
  for (const auto& c : candidates)
    if (c.score > best.score) best = c;
  // A shorter candidate of which best is 2-4 times: compare both on the shorter one's level.
  for (const auto& s : candidates) {
    if (s.level >= best.level || s.score < kConsidered * best.score) continue;
    const double ratio = best.period_samples / s.period_samples;
    const double m = std::round(ratio);
    // On a level with fewer than 4 samples per short period, pairwise means alias that period
    // into long peaks that are no multiple of it (many epochs in view: 7.06x, 8.93x seen).
    const bool aliased = s.period_samples < 4 * std::ldexp(1.0, best.level);
    if (!aliased && (m < 2 || m > 4 || std::abs(ratio - m) > kHarmonicTolerance * m)) continue;
    const auto level = static_cast<std::size_t>(s.level);
    const double scale = std::ldexp(1.0, s.level);
    double r_short = acf_at(an, level, s.period_samples / scale);
    const double r_long = acf_at(an, level, best.period_samples / scale);
    if (r_short < kShorterWins * r_long && s.level >= 1) {
      // Also two levels finer, each at its best lag within its own quantisation (half a sample
      // of the level it was found on): on the shorter one's level a signature narrower than one
      // level sample is lost when the period is a fractional number of level samples (300 s
      // epochs at 1 Hz: 9.375 level-5 samples) while a multiple near an integer lag there
      // (900 / 64 = 14.06) keeps it.
      const auto fine = static_cast<std::size_t>(std::max(0, s.level - 2));
      const double f_short = acf_peak_near(an, fine, s.period_samples, 0.5 * scale);
      const double f_long = acf_peak_near(an, fine, best.period_samples, std::ldexp(0.5, best.level));
      if (f_short >= kShorterWins * f_long) r_short = std::max(r_short, kShorterWins * r_long);
    }
    if (r_short >= kShorterWins * r_long) {
      best = s;
      best.score = r_short;
      break;
    }
  }
  Candidate chosen = best;
  double best_fine = 0;
  for (const auto& c : candidates) {
    if (c.period_samples <= best.period_samples * kMuchLonger || c.score < kLongerWins * best.score) continue;
    const double ratio = c.period_samples / best.period_samples;
    const double m = std::round(ratio);
    // 2-4 times the best peak: its harmonic (epoch jitter blurs the multiple, hence 10 %).
    // Further out only a near-exact multiple is a harmonic; otherwise best is an iteration-level
    // period nested inside the epoch.
    const double tolerance = m <= 4 ? kHarmonicTolerance : kFarHarmonicTolerance;
    bool multiple = std::abs(ratio - m) <= tolerance * m;
    if (!multiple && m > 4) {
      // Beyond 4x, 2 % is finer than either peak's level quantisation (270 s epochs at 1 Hz:
      // 266.8 on level 5, 1915 on level 7, 7.18x): test the periods refined two levels finer.
      if (best_fine <= 0) best_fine = refine_period(an, best).period_samples;
      const double r = refine_period(an, c).period_samples / best_fine;
      const double k = std::round(r);
      multiple = k >= 2 && std::abs(r - k) <= (k <= 4 ? kHarmonicTolerance : kFarHarmonicTolerance) * k;
    }
    if (multiple) continue;
    // Compare on best's level: a coarse level's ACF is inflated by its averaging.
    const auto level = static_cast<std::size_t>(best.level);
    const double scale = std::ldexp(1.0, best.level);
    const double r_best = acf_at(an, level, best.period_samples / scale);
    const double r_c = acf_at(an, level, c.period_samples / scale);
    if (r_c < kLongerWins * r_best) continue;
    if (chosen.period_samples == best.period_samples || c.score > chosen.score) chosen = c;
  }
  return chosen;
}

Refined refine_period(const Analysis& an, const Candidate& cand) {
  const int levels = static_cast<int>(an.levels());
  const int level = std::clamp(cand.level - 2, 0, levels - 1);
  const double scale = std::ldexp(1.0, level);
  const double centre = cand.period_samples / scale;
  const std::size_t len = an.level_len[static_cast<std::size_t>(level)];
  auto lo = static_cast<std::size_t>(std::max(2.0, std::floor(centre * 0.9 - 2)));
  auto hi = static_cast<std::size_t>(std::ceil(centre * 1.1 + 2));
  hi = std::min(hi, len > 2 ? len - 2 : 0);
  Refined out{cand.period_samples, cand.score, {}};
  if (hi <= lo + 2) return out;
  std::vector<std::vector<double>> per;
  const bool hp = static_cast<double>(len) > 8.0 * centre;
  const auto total = combined_acf(an, static_cast<std::size_t>(level), lo, hi, hp, &per);
  std::size_t best = 1;
  for (std::size_t i = 1; i + 1 < total.size(); ++i)
    if (total[i] > total[best]) best = i;
  const double off = signal::parabolic_offset(total[best - 1], total[best], total[best + 1]);
  out.period_samples = (static_cast<double>(lo + best) + off) * scale;
  out.score = total[best];
  out.per_channel.resize(an.metrics.size());
  for (std::size_t c = 0; c < an.metrics.size(); ++c)
    out.per_channel[c] = per[c].empty() ? 0.0 : per[c][best];
  return out;
}


}  // namespace epochcast::detail
