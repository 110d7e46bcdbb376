// Quantisation flicker: epoch-profile amplitude against the reading step. docs/detection.md "Method" 7.
#include "flicker.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "detect_internal.hpp"
#include "signal.hpp"

namespace epochcast::detail {

double profile_amplitude(std::span<const double> raw, double period_samples, FoldRuns& runs) {
  // A centred window of at least 16 periods is plenty for a profile.
  const auto cap = static_cast<std::size_t>(std::max(65536.0, 16 * period_samples));
  if (raw.size() > cap) raw = raw.subspan((raw.size() - cap) / 2, cap);
  const std::size_t n = raw.size();
  if (n < 4 || !(period_samples >= 2)) return 0;
  const auto bins = static_cast<std::size_t>(std::clamp(std::ceil(period_samples), 2.0, 256.0));
  std::vector<double> sum(bins, 0.0);
  std::vector<std::size_t> count(bins, 0);
  const double bins_per_sample = static_cast<double>(bins) / period_samples;
  std::size_t n_done = 0;
  double phase = 0;  // samples into the current period; incremental, no fmod per sample
  if (bins_per_sample < 0.25) {
    // Four or more samples per bin: bin by bin, each run summed in one sweep (the per-sample
    // loop below waits on its phase and sum chains: 0.8 ms of a 24 h detection). The run ends
    // where phase * bins_per_sample reaches the next bin, as the per-sample rule would put it
    // (a sample on the very edge may fall on the other side).
    if (runs.n != n || runs.period_samples != period_samples) {
      runs.n = n;
      runs.period_samples = period_samples;
      runs.bin.clear();
      runs.len.clear();
      std::vector<double> edges(bins);  // phase where each bin ends
      for (std::size_t b = 0; b + 1 < bins; ++b) edges[b] = static_cast<double>(b + 1) / bins_per_sample;
      edges[bins - 1] = period_samples;
      for (std::size_t i = 0; i < n;) {
        const auto b = std::min(bins - 1, static_cast<std::size_t>(phase * bins_per_sample));
        const double ahead = edges[b] - phase;  // samples j >= 0 with phase + j < edge: ceil(ahead)
        auto len = static_cast<std::size_t>(std::max(ahead, 0.0));
        len += static_cast<double>(len) < ahead;
        len = std::min(n - i, std::max<std::size_t>(1, len));
        runs.bin.push_back(static_cast<std::uint32_t>(b));
        runs.len.push_back(len);
        i += len;
        phase += static_cast<double>(len);
        if (phase >= period_samples) phase -= period_samples;
      }
    }
    for (std::size_t r = 0, i = 0; r < runs.bin.size(); ++r) {
      const std::size_t b = runs.bin[r], len = runs.len[r];
      sum[b] += signal::sum(raw.subspan(i, len));
      count[b] += len;
      i += len;
    }
    n_done = n;
  }
  // Consecutive samples mostly share a bin: sum them in a register, store when the bin changes.
  std::size_t cur = 0, run = 0;
  double acc = 0;
  for (std::size_t i = n_done; i < n; ++i) {
    const auto b = std::min(bins - 1, static_cast<std::size_t>(phase * bins_per_sample));
    if (b != cur) {
      sum[cur] += acc;
      count[cur] += run;
      cur = b;
      acc = 0;
      run = 0;
    }
    acc += raw[i];
    ++run;
    phase += 1;
    if (phase >= period_samples) phase -= period_samples;
  }
  if (n_done < n) {
    sum[cur] += acc;
    count[cur] += run;
  }
  std::vector<double> profile;
  for (std::size_t b = 0; b < bins; ++b)
    if (count[b]) profile.push_back(sum[b] / static_cast<double>(count[b]));
  const double med = signal::median(profile);
  double amplitude = 0;
  for (double v : profile) amplitude = std::max(amplitude, std::abs(v - med));
  return amplitude;
}

// amplitude / step >= 2, step the reading step (smallest_step of the first 4,096 finite
// readings). Any gap d between two of every 16th of those readings (spread out: a trace often
// starts idle on one reading) settles it when d > 8192e-9 (max |reading| + 1) and
// amplitude / d >= 2: the other readings split that gap into gaps of which at least one counts
// as a step (each one skipped is <= 1e-9 (max |reading| + 1), and there are at most 4,095), so
// step <= d. Else the exact step. The radix sort of 4,096 continuous readings per voting channel
// was 3 % of a 24 h detection.
bool profile_resolved(std::span<const double> raw, std::span<const double> readings, double period_samples,
                      FoldRuns& runs) {
  const double amplitude = profile_amplitude(raw, period_samples, runs);
  double biggest = 0;
  std::array<double, 256> subset;
  std::size_t taken = 0;
  for (std::size_t i = 0, seen = 0; i < readings.size() && seen < 4096; ++i) {
    if (!std::isfinite(readings[i])) continue;
    biggest = std::max(biggest, std::abs(readings[i]));
    if (seen++ % 16 == 0) subset[taken++] = readings[i];
  }
  std::sort(subset.begin(), subset.begin() + static_cast<std::ptrdiff_t>(taken));
  const double margin = 8192e-9 * (biggest + 1);
  for (std::size_t k = 1; k < taken; ++k) {
    const double d = subset[k] - subset[k - 1];
    if (d > margin && amplitude / d >= 2.0) return true;
  }
  const double step = signal::smallest_step(readings, 4096);
  return step > 0 && amplitude / step >= 2.0;
}

// True when the region's values span at most one reading step (e.g. only 1965 and 1980 MHz).
bool toggles_between_two_readings(std::span<const double> raw, std::span<const double> readings) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : raw) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (!(hi > lo)) return false;
  const double step = signal::smallest_step(readings, 4096);
  return step > 0 && hi - lo <= step * (1 + 1e-9);
}

double profile_amplitude(std::span<const double> raw, double period_samples, bool shared) {
  thread_local FoldRuns cache;
  FoldRuns fresh;
  return profile_amplitude(raw, period_samples, shared ? cache : fresh);
}

}  // namespace epochcast::detail
