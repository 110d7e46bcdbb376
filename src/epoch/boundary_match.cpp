// Boundary signature, template matching along a chain, and the boundary grid's fit.
// docs/detection.md "Method" 6.
#include "boundary_match.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace epochcast::detail {
namespace {

// The boundary stage works on the level where the period is at most this many samples.
constexpr double kBoundaryLevelMaxLag = 64;
// Beyond this many epochs only every k-th boundary is matched (the rest interpolated).
// Guarded by LongRuns.* (5,000 epochs of 20 samples, 1 in 2 searched).
constexpr std::size_t kMaxMatchedBoundaries = 4096;
// The epoch profile is folded over at most this many periods: over thousands of epochs a small
// error of the period (or epoch jitter) would smear the profile flat.
constexpr double kFoldPeriods = 64;
// A boundary matches when the template's normalised correlation with it is at least this (a
// template folded from N windows correlates ~1/sqrt(N) with each by construction, which is why
// the confidence counts delimited epochs, not matches alone). Guarded by RealTraceTarget.* and
// LaunchBound.FewEpochNullFindsAreRare.
constexpr double kMatchNcc = 0.3;
// Matched boundaries off the line (or the chain's expected spacing) by more than this fraction
// of the period (x sqrt(steps) along the chain, at least one sample) are outliers.
constexpr double kBoundaryTolerance = 0.1;
// The template spans at most kTemplateHalf level samples either side of the signature, and is
// searched within period / kSearchDivisor (at most kSearchMax) of each expected boundary.
constexpr double kTemplateHalf = 24;
constexpr double kSearchDivisor = 6;
constexpr double kSearchMax = 12;
// The signature repeats half a period later (the period is probably twice the true one) when
// the twin bump is at least kTwinShare of the peak and the quarter points stay below kQuietShare.
// Guarded by Synthetic.* (no period doubling).
constexpr double kTwinShare = 0.6;
constexpr double kQuietShare = 0.3;

}  // namespace

BoundaryFit locate_boundaries(const Analysis& an, const Refined& ref) {
  BoundaryFit fit;
  const std::size_t levels = an.levels();
  std::size_t level = 0;
  while (level + 1 < levels && ref.period_samples / std::ldexp(1.0, static_cast<int>(level)) >
                                   kBoundaryLevelMaxLag)
    ++level;
  const double scale = std::ldexp(1.0, static_cast<int>(level));
  const double period = ref.period_samples / scale;  // level samples
  const std::size_t len = an.level_len[level];
  if (period < 2 || static_cast<double>(len) < 1.5 * period) return fit;
  const std::size_t bins = std::max<std::size_t>(4, static_cast<std::size_t>(std::ceil(period)));
  const std::size_t channels = an.metrics.size();

  std::vector<std::vector<double>> z(channels);
  std::vector<double> w(channels, 0.0);
  for (std::size_t c = 0; c < channels; ++c) {
    w[c] = std::max(0.0, ref.per_channel.empty() ? 0.0 : ref.per_channel[c]);
    if (w[c] <= 0) continue;
    const auto lv = an.level(c, level);
    z[c].assign(lv.begin(), lv.end());
    if (static_cast<double>(len) >= 4 * period)
      high_pass(z[c], static_cast<std::size_t>(std::ceil(3 * period)));
  }
  std::vector<std::size_t> bin_of(len);
  {
    const double bins_per_sample = static_cast<double>(bins) / period;
    double phase = 0;
    for (std::size_t i = 0; i < len; ++i) {
      bin_of[i] = std::min(bins - 1, static_cast<std::size_t>(phase * bins_per_sample));
      phase += 1;
      if (phase >= period) phase -= period;
    }
  }
  // Fold a centred window of at most kFoldPeriods periods: over thousands of epochs a small
  // error of the period (or epoch jitter) would smear the profile flat.
  const auto fold_len = static_cast<std::size_t>(
      std::min(static_cast<double>(len), std::ceil(kFoldPeriods * period)));
  const std::size_t fold_begin = (len - fold_len) / 2, fold_end = fold_begin + fold_len;
  std::vector<std::size_t> count(bins, 0);
  for (std::size_t i = fold_begin; i < fold_end; ++i) ++count[bin_of[i]];
  std::vector<std::vector<double>> profile(channels, std::vector<double>(bins, 0.0));
  std::vector<double> sigma(channels, 1.0), med(channels, 0.0);
  std::vector<double> anomaly(bins, 0.0);
  for (std::size_t c = 0; c < channels; ++c) {
    if (w[c] <= 0) continue;
    auto& p = profile[c];
    for (std::size_t i = fold_begin; i < fold_end; ++i) p[bin_of[i]] += z[c][i];
    for (std::size_t b = 0; b < bins; ++b) p[b] = count[b] ? p[b] / static_cast<double>(count[b]) : 0;
    double ss = 0;
    for (std::size_t i = fold_begin; i < fold_end; ++i) ss += (z[c][i] - p[bin_of[i]]) * (z[c][i] - p[bin_of[i]]);
    sigma[c] = std::max(1e-3, std::sqrt(ss / static_cast<double>(fold_len)));
    med[c] = signal::median(p);
    for (std::size_t b = 0; b < bins; ++b) anomaly[b] += w[c] * std::abs(p[b] - med[c]) / sigma[c];
  }
  const std::size_t peak = static_cast<std::size_t>(
      std::max_element(anomaly.begin(), anomaly.end()) - anomaly.begin());
  const double a_med = signal::median(anomaly);
  const double threshold = a_med + 0.5 * (anomaly[peak] - a_med);
  if (!(anomaly[peak] > a_med)) return fit;
  if (bins >= 8) {
    auto max_near = [&](std::size_t centre, std::size_t radius) {
      double m = 0;
      for (std::size_t d = 0; d <= 2 * radius; ++d) m = std::max(m, anomaly[(centre + bins - radius + d) % bins]);
      return m;
    };
    const double rise = anomaly[peak] - a_med;
    const double twin = max_near(peak + bins / 2, bins / 16) - a_med;
    const double q1 = anomaly[(peak + bins / 4) % bins] - a_med;
    const double q3 = anomaly[(peak + 3 * bins / 4) % bins] - a_med;
    fit.signature_repeats_at_half = twin >= kTwinShare * rise && q1 < kQuietShare * rise && q3 < kQuietShare * rise;
  }
  std::size_t before = 0, after = 0;  // extent of the signature around its peak, in bins
  while (before + 1 < bins && anomaly[(peak + bins - before - 1) % bins] > threshold) ++before;
  while (after + before + 1 < bins && anomaly[(peak + after + 1) % bins] > threshold) ++after;
  // Mid-point of the signature, in level samples from the region start (phase in [0, period)).
  const double bin_width = period / static_cast<double>(bins);
  const double mid_bin = static_cast<double>(peak) + 0.5 * (static_cast<double>(after) -
                                                            static_cast<double>(before));
  double phase0 = std::fmod((mid_bin + 0.5) * bin_width + period, period);

  // Template: each channel's signed deviation around the mid-point, weighted by its SNR.
  const int half = static_cast<int>(std::min(std::ceil(period / 2), kTemplateHalf));
  const int search = static_cast<int>(std::max(1.0, std::min(std::round(period / kSearchDivisor), kSearchMax)));
  std::vector<std::vector<double>> tmpl(channels, std::vector<double>(2 * half + 1, 0.0));
  double t_energy = 0;
  for (std::size_t c = 0; c < channels; ++c) {
    if (w[c] <= 0) continue;
    double mean = 0;
    for (int j = -half; j <= half; ++j) {
      double ph = std::fmod(phase0 + j + 100 * period, period);
      const auto b = std::min(bins - 1, static_cast<std::size_t>(ph / bin_width));
      tmpl[c][static_cast<std::size_t>(j + half)] = profile[c][b];
      mean += profile[c][b];
    }
    mean /= static_cast<double>(2 * half + 1);
    for (double& v : tmpl[c]) {
      v = (v - mean) * w[c] / (sigma[c] * sigma[c]);
      t_energy += v * v;
    }
  }
  if (!(t_energy > 0)) return fit;

  // Template energy in signal units, for the normalised correlation of each match.
  double t_energy_w = 0;
  for (std::size_t c = 0; c < channels; ++c) {
    if (w[c] <= 0) continue;
    for (double t : tmpl[c]) t_energy_w += t * t * sigma[c] * sigma[c] / w[c];
  }

  // The template's best match within +-search of an expected position: (position, ncc).
  auto match_near = [&](double q) {
    const auto qi = static_cast<long>(std::lround(q));
    std::vector<double> scores(2 * search + 1, 0.0);
    int s = -search;
    // Away from the ends (nearly every boundary) four shifts at a time: four independent sums,
    // each over the same terms in the same order as below (one sum waits on its adder).
    if (qi - search - half >= 0 && qi + search + half < static_cast<long>(len)) {
      for (; s + 3 <= search; s += 4) {
        double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        for (std::size_t c = 0; c < channels; ++c) {
          if (w[c] <= 0) continue;
          const double* t = tmpl[c].data();
          const double* zc = z[c].data() + (qi + s - half);
          for (int j = 0; j <= 2 * half; ++j) {
            const double tv = t[j];
            a0 += tv * zc[j];
            a1 += tv * zc[j + 1];
            a2 += tv * zc[j + 2];
            a3 += tv * zc[j + 3];
          }
        }
        const auto at = static_cast<std::size_t>(s + search);
        scores[at] = a0, scores[at + 1] = a1, scores[at + 2] = a2, scores[at + 3] = a3;
      }
    }
    for (; s <= search; ++s) {
      double score = 0;
      for (std::size_t c = 0; c < channels; ++c) {
        if (w[c] <= 0) continue;
        for (int j = -half; j <= half; ++j) {
          const long i = qi + s + j;
          if (i < 0 || i >= static_cast<long>(len)) continue;
          score += tmpl[c][static_cast<std::size_t>(j + half)] * z[c][static_cast<std::size_t>(i)];
        }
      }
      scores[static_cast<std::size_t>(s + search)] = score;
    }
    const auto best = static_cast<std::size_t>(std::max_element(scores.begin(), scores.end()) - scores.begin());
    double off = 0;
    if (best > 0 && best + 1 < scores.size())
      off = signal::parabolic_offset(scores[best - 1], scores[best], scores[best + 1]);
    const double pos = static_cast<double>(qi) + static_cast<double>(best) - search + off;
    // Normalised correlation of the template with the matched window: how well it matches.
    double zz = 0, tz = 0;
    for (std::size_t c = 0; c < channels; ++c) {
      if (w[c] <= 0) continue;
      for (int j = -half; j <= half; ++j) {
        const long i = qi + static_cast<long>(best) - search + j;
        if (i < 0 || i >= static_cast<long>(len)) continue;
        const double t = tmpl[c][static_cast<std::size_t>(j + half)];
        const double v = z[c][static_cast<std::size_t>(i)];
        // Undo the template weights so the correlation is in signal units.
        zz += v * v * w[c] / (sigma[c] * sigma[c]);
        tz += t * v;
      }
    }
    const double ncc = (zz > 0 && t_energy_w > 0) ? tz / std::sqrt(zz * t_energy_w) : 0;
    return std::pair<double, double>{pos, ncc};
  };

  // Chained search: each boundary is looked for one period after the last matched one, so
  // neither a small error of the period nor epochs that random-walk with jitter (thousands of
  // epochs) drift out of the window. The chain starts in the folded window (where phase0 is
  // right) and runs to both ends.
  const auto total_k = static_cast<std::size_t>(std::max(0.0, (static_cast<double>(len) - phase0) / period)) + 1;
  const std::size_t stride = std::max<std::size_t>(1, total_k / kMaxMatchedBoundaries + 1);
  const double mid = 0.5 * static_cast<double>(fold_begin + fold_end);
  std::size_t k_mid = static_cast<std::size_t>(std::max(0.0, std::round((mid - phase0) / period)));
  k_mid = std::min(k_mid, total_k > 0 ? total_k - 1 : 0);
  k_mid -= k_mid % stride;
  struct Match {
    double k, pos, ncc;
  };
  std::vector<Match> found;
  // The expected position is the mean of the last few matches, each carried forward by whole
  // periods: it follows a random walk within a few epochs, yet one match that is a sample off
  // (few samples per epoch) does not shift the next search by a whole sample.
  constexpr std::size_t kChainMemory = 4;
  struct Chain {
    std::vector<std::pair<double, double>> recent;  // (k, position), newest last
    bool virtual_anchor = true;
    double expect(double k, double per) const {
      double sum = 0;
      for (const auto& [kr, pr] : recent) sum += pr + (k - kr) * per;
      return sum / static_cast<double>(recent.size());
    }
    void add(double k, double pos) {
      if (virtual_anchor) recent.clear();
      virtual_anchor = false;
      recent.emplace_back(k, pos);
      if (recent.size() > kChainMemory) recent.erase(recent.begin());
    }
  };
  Chain chain;
  chain.recent.emplace_back(static_cast<double>(k_mid), phase0 + static_cast<double>(k_mid) * period);
  Chain mid_chain = chain;
  for (std::size_t k = k_mid; k < total_k; k += stride) {
    const double q = chain.expect(static_cast<double>(k), period);
    if (q >= static_cast<double>(len)) break;
    const auto [pos, ncc] = match_near(q);
    found.push_back({static_cast<double>(k), pos, ncc});
    if (ncc >= kMatchNcc) chain.add(static_cast<double>(k), pos);
    if (k == k_mid) mid_chain = chain;
  }
  chain = mid_chain;
  for (std::size_t k = k_mid; k >= stride;) {
    k -= stride;
    const double q = chain.expect(static_cast<double>(k), period);
    if (q < -static_cast<double>(search)) break;
    const auto [pos, ncc] = match_near(q);
    found.push_back({static_cast<double>(k), pos, ncc});
    if (ncc >= kMatchNcc) chain.add(static_cast<double>(k), pos);
  }
  std::sort(found.begin(), found.end(), [](const Match& x, const Match& y) { return x.k < y.k; });
  std::vector<double> ks, positions, quality;
  for (const auto& m : found) {
    ks.push_back(m.k);
    positions.push_back(m.pos);
    quality.push_back(m.ncc);
  }
  if (positions.empty()) return fit;

  // Robust least squares: position = t0 + k * period.
  std::vector<bool> inlier(positions.size());
  for (std::size_t i = 0; i < positions.size(); ++i) inlier[i] = quality[i] >= kMatchNcc;
  double t0 = phase0, p = period;
  for (int round = 0; round < 3; ++round) {
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (std::size_t i = 0; i < positions.size(); ++i) {
      if (!inlier[i]) continue;
      n += 1;
      sx += ks[i];
      sy += positions[i];
      sxx += ks[i] * ks[i];
      sxy += ks[i] * positions[i];
    }
    if (n < 2) break;
    const double den = n * sxx - sx * sx;
    if (!(std::abs(den) > 0)) break;
    const double slope = (n * sxy - sx * sy) / den;
    if (std::abs(slope - period) > kBoundaryTolerance * period) break;
    p = slope;
    t0 = (sy - p * sx) / n;
    const double tolerance = std::max(kBoundaryTolerance * period, 1.0);
    for (std::size_t i = 0; i < positions.size(); ++i)
      inlier[i] = quality[i] >= kMatchNcc && std::abs(positions[i] - (t0 + p * ks[i])) <= tolerance;
  }
  double ss = 0;
  std::size_t n_in = 0;
  for (std::size_t i = 0; i < positions.size(); ++i) {
    if (!inlier[i]) continue;
    const double r = positions[i] - (t0 + p * ks[i]);
    ss += r * r;
    ++n_in;
  }
  fit.period_samples = p * scale;
  fit.searched = positions.size();
  fit.stride = stride;
  fit.matched = n_in;
  fit.inlier_fraction = static_cast<double>(n_in) / static_cast<double>(positions.size());
  // Level-sample jitter includes the sample quantisation (1/sqrt(12) of a sample).
  fit.jitter = n_in >= 2 ? std::sqrt(ss / static_cast<double>(n_in)) / p : 1.0;

  // The chain's view: consecutive good matches whose spacing is within 10 % of a period (per
  // step) of the expected one. Their mean spacing is the mean epoch, their dispersion the
  // regularity. It replaces the line when it explains more boundaries: a long run whose
  // epochs random-walk away from any straight line.
  std::vector<bool> chained(positions.size(), false);
  double sum_d = 0, sum_k = 0;
  std::vector<std::pair<double, double>> steps;  // (spacing, k steps)
  for (std::size_t i = 0, prev = positions.size(); i < positions.size(); ++i) {
    if (quality[i] < kMatchNcc) continue;
    if (prev < positions.size()) {
      const double dk = ks[i] - ks[prev];
      const double d = positions[i] - positions[prev];
      if (std::abs(d - dk * period) <= std::max(kBoundaryTolerance * period * std::sqrt(dk), 1.0)) {
        chained[i] = chained[prev] = true;
        sum_d += d;
        sum_k += dk;
        steps.emplace_back(d, dk);
      }
    }
    prev = i;
  }
  const auto n_chain = static_cast<std::size_t>(std::count(chained.begin(), chained.end(), true));
  bool use_chain = false;
  if (n_chain > n_in && steps.size() >= 2 && sum_k > 0) {
    const double pc = sum_d / sum_k;
    double ss_c = 0;
    for (const auto& [d, dk] : steps) ss_c += (d - dk * pc) * (d - dk * pc) / dk;
    use_chain = true;
    inlier = chained;
    fit.period_samples = pc * scale;
    fit.matched = n_chain;
    fit.inlier_fraction = static_cast<double>(n_chain) / static_cast<double>(positions.size());
    fit.jitter = std::sqrt(ss_c / static_cast<double>(steps.size())) / pc;
    p = pc;
  }

  // Every boundary: the matched position where it fits; else the line (or, for the chain,
  // interpolated between the neighbouring matched ones).
  std::vector<std::pair<double, double>> good;  // (k, position) of the inliers
  for (std::size_t i = 0; i < positions.size(); ++i)
    if (inlier[i]) good.emplace_back(ks[i], positions[i]);
  std::size_t next = 0;
  for (std::size_t k = 0;; ++k) {
    const double kd = static_cast<double>(k);
    while (next < good.size() && good[next].first < kd) ++next;
    double x = t0 + p * kd;
    if (next < good.size() && good[next].first == kd) {
      x = good[next].second;
    } else if (use_chain && !good.empty()) {
      if (next == 0) {
        x = good.front().second - (good.front().first - kd) * p;
      } else if (next == good.size()) {
        x = good.back().second + (kd - good.back().first) * p;
      } else {
        const auto& [k0, x0] = good[next - 1];
        const auto& [k1, x1] = good[next];
        x = x0 + (x1 - x0) * (kd - k0) / (k1 - k0);
      }
    }
    if (x >= static_cast<double>(len)) break;
    if (x < 0) continue;
    // Level position -> original sample index within the region.
    fit.boundaries.push_back((x + 0.5) * scale - 0.5);
  }
  return fit;
}

}  // namespace epochcast::detail
