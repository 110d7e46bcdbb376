// The published detector, re-implemented as the baseline (field notes §1). Where the paper
// leaves a parameter open, the choice is written next to it and in docs/detection.md.
#include "eval/published.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace epochcast {
namespace {

// The median as signal::median (private to src/epoch) takes it: the element of rank
// round((n - 1) / 2), no averaging of the middle two; NaN for none.
double median(std::vector<double> x) {
  if (x.empty()) return std::numeric_limits<double>::quiet_NaN();
  const auto k = static_cast<std::ptrdiff_t>(0.5 * static_cast<double>(x.size() - 1) + 0.5);
  std::nth_element(x.begin(), x.begin() + k, x.end());
  return x[static_cast<std::size_t>(k)];
}

constexpr std::size_t kMaxSamples = 1999;
constexpr double kProminence = 0.01;
constexpr double kDbscanEpsSamples = 5;  // open in the paper: peaks this close are one event

// Savitzky-Golay, window 11, cubic (scipy.signal.savgol_filter(x, 11, 3)); edges mirrored.
std::vector<double> savgol_11_3(const std::vector<double>& x) {
  static constexpr std::array<double, 11> kCoef{-36, 9, 44, 69, 84, 89, 84, 69, 44, 9, -36};
  const long n = static_cast<long>(x.size());
  std::vector<double> out(x.size());
  for (long i = 0; i < n; ++i) {
    double s = 0;
    for (long k = -5; k <= 5; ++k) {
      long j = i + k;
      if (j < 0) j = -j;
      if (j >= n) j = 2 * (n - 1) - j;
      j = std::clamp(j, 0L, n - 1);
      s += kCoef[static_cast<std::size_t>(k + 5)] * x[static_cast<std::size_t>(j)];
    }
    out[static_cast<std::size_t>(i)] = s / 429.0;
  }
  return out;
}

void min_max(std::vector<double>& x) {
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  const double a = *lo, b = *hi;
  for (double& v : x) v = b > a ? (v - a) / (b - a) : 0.0;
}

// scipy.signal.find_peaks(x, prominence=p): local maxima (plateaus by their middle) whose
// prominence reaches p.
std::vector<std::size_t> find_peaks(const std::vector<double>& x, double prominence) {
  std::vector<std::size_t> peaks;
  const std::size_t n = x.size();
  for (std::size_t i = 1; i + 1 < n;) {
    if (x[i] > x[i - 1]) {
      std::size_t j = i;
      while (j + 1 < n && x[j + 1] == x[i]) ++j;
      if (j + 1 < n && x[j + 1] < x[i]) {
        const std::size_t peak = (i + j) / 2;
        // Prominence: height above the higher of the two bases.
        double left_min = x[peak];
        for (std::size_t k = peak; k-- > 0;) {
          if (x[k] > x[peak]) break;
          left_min = std::min(left_min, x[k]);
        }
        double right_min = x[peak];
        for (std::size_t k = peak + 1; k < n; ++k) {
          if (x[k] > x[peak]) break;
          right_min = std::min(right_min, x[k]);
        }
        if (x[peak] - std::max(left_min, right_min) >= prominence) peaks.push_back(peak);
      }
      i = j + 1;
    } else {
      ++i;
    }
  }
  return peaks;
}

}  // namespace

Segmentation detect_epochs_published(const Trace& trace) {
  Segmentation seg;
  seg.first_timestamp = trace.first_timestamp;
  seg.interval_s = trace.median_interval_s();
  seg.channels = {"gpu_util_pct"};
  const Channel* util = trace.find(Metric::kGpuUtil);
  if (!util) {
    seg.reason = "no utilization.gpu channel";
    return seg;
  }
  std::vector<double> x, t;
  for (std::size_t i = trace.size() / 2; i < trace.size() && x.size() < kMaxSamples; ++i) {
    if (!std::isfinite(util->values[i])) continue;
    x.push_back(util->values[i]);
    t.push_back(trace.time_s[i]);
  }
  if (x.size() < 16) {
    seg.reason = "too few samples in the second half";
    return seg;
  }
  // Anomaly score: distance from the typical level in robust standard deviations.
  const double med = median(x);
  std::vector<double> dev(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) dev[i] = std::abs(x[i] - med);
  const double mad = 1.4826 * median(dev) + 1e-6;
  std::vector<double> score(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) score[i] = dev[i] / mad;
  for (int pass = 0; pass < 2; ++pass) {
    score = savgol_11_3(score);
    min_max(score);
  }
  auto peaks = find_peaks(score, kProminence);
  const double mean = std::accumulate(score.begin(), score.end(), 0.0) / static_cast<double>(score.size());
  std::erase_if(peaks, [&](std::size_t p) { return score[p] < mean; });
  if (peaks.size() < 2) {
    seg.reason = "fewer than two anomaly peaks";
    return seg;
  }
  // DBSCAN in one dimension (min_samples 1): consecutive peaks within eps form a cluster.
  std::vector<std::vector<std::size_t>> clusters{{peaks.front()}};
  for (std::size_t k = 1; k < peaks.size(); ++k) {
    if (static_cast<double>(peaks[k] - clusters.back().back()) <= kDbscanEpsSamples) clusters.back().push_back(peaks[k]);
    else clusters.push_back({peaks[k]});
  }
  if (clusters.size() < 2) {
    seg.reason = "one cluster of peaks";
    return seg;
  }
  // Span of the peaks over the gaps between clusters (the charitable reading of
  // "span / clusters": dividing by the count itself is always biased low).
  const double span_s = t[peaks.back()] - t[peaks.front()];
  seg.period_s = span_s / static_cast<double>(clusters.size() - 1);
  seg.candidate_period_s = seg.period_s;
  seg.found = seg.period_s > 0;
  seg.confidence = seg.found ? 1.0 : 0.0;
  std::vector<double> centres;
  for (const auto& c : clusters) {
    double s = 0;
    for (auto p : c) s += t[p];
    centres.push_back(s / static_cast<double>(c.size()));
  }
  for (std::size_t i = 0; i + 1 < centres.size(); ++i) seg.epochs.push_back({centres[i], centres[i + 1]});
  seg.reason = fmt::format("{} peak clusters in the second half", clusters.size());
  return seg;
}

}  // namespace epochcast
