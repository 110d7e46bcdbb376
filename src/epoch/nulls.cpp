// Null models: phase-randomised (amplitude-adjusted) surrogates and block-scrambled copies.
#include "epochcast/epoch/nulls.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <numeric>
#include <random>

namespace epochcast {
namespace {

using cd = std::complex<double>;

// In-place iterative radix-2 FFT; a.size() a power of two. inverse: unscaled.
void fft(std::vector<cd>& a, bool inverse) {
  const std::size_t n = a.size();
  for (std::size_t i = 1, j = 0; i < n; ++i) {
    std::size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (std::size_t len = 2; len <= n; len <<= 1) {
    const double ang = 2 * M_PI / static_cast<double>(len) * (inverse ? 1 : -1);
    const cd wl(std::cos(ang), std::sin(ang));
    for (std::size_t i = 0; i < n; i += len) {
      cd w(1);
      for (std::size_t k = 0; k < len / 2; ++k) {
        const cd u = a[i + k], v = a[i + k + len / 2] * w;
        a[i + k] = u + v;
        a[i + k + len / 2] = u - v;
        w *= wl;
      }
    }
  }
}

// Least-squares line of y over its index: (intercept, slope).
std::pair<double, double> line_fit(std::span<const double> y) {
  const double n = static_cast<double>(y.size());
  if (y.size() < 2) return {y.empty() ? 0.0 : y[0], 0.0};
  const double mx = (n - 1) / 2;
  double my = 0;
  for (double v : y) my += v;
  my /= n;
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double dx = static_cast<double>(i) - mx;
    sxy += dx * (y[i] - my);
    sxx += dx * dx;
  }
  const double b = sxx > 0 ? sxy / sxx : 0;
  return {my - b * mx, b};
}

}  // namespace

bool fill_linear(std::vector<double>& v) {
  std::size_t first = v.size();
  for (std::size_t i = 0; i < v.size(); ++i)
    if (std::isfinite(v[i])) { first = i; break; }
  if (first == v.size()) return false;
  for (std::size_t i = 0; i < first; ++i) v[i] = v[first];
  std::size_t last = first;
  for (std::size_t i = first + 1; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) continue;
    for (std::size_t k = last + 1; k < i; ++k)
      v[k] = v[last] + (v[i] - v[last]) * static_cast<double>(k - last) / static_cast<double>(i - last);
    last = i;
  }
  for (std::size_t i = last + 1; i < v.size(); ++i) v[i] = v[last];
  return true;
}

void phase_randomise(const std::vector<std::span<const double>>& series, std::uint64_t seed,
                     std::vector<std::vector<double>>& out, bool amplitude_adjust) {
  out.resize(series.size());
  if (series.empty()) return;
  const std::size_t n = series[0].size();
  std::size_t m = 1;
  while (m < n) m <<= 1;
  // One set of random phases for every series (the cross-spectra are kept).
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 2 * M_PI);
  std::vector<cd> rot(m, cd(1));
  for (std::size_t k = 1; k < (m + 1) / 2; ++k) {
    rot[k] = std::polar(1.0, u(rng));
    rot[m - k] = std::conj(rot[k]);
  }
  std::vector<cd> a(m);
  std::vector<std::size_t> order(n);
  std::vector<double> sorted(n);
  for (std::size_t s = 0; s < series.size(); ++s) {
    const auto y = series[s];
    auto& o = out[s];
    o.assign(n, 0.0);
    if (n < 4) {
      o.assign(y.begin(), y.end());
      continue;
    }
    const auto [a0, b] = line_fit(y);
    for (std::size_t i = 0; i < m; ++i) a[i] = i < n ? cd(y[i] - (a0 + b * static_cast<double>(i))) : cd(0);
    fft(a, false);
    for (std::size_t k = 0; k < m; ++k) a[k] *= rot[k];
    fft(a, true);
    if (!amplitude_adjust) {
      const double inv = 1.0 / static_cast<double>(m);
      for (std::size_t i = 0; i < n; ++i) o[i] = a[i].real() * inv + a0 + b * static_cast<double>(i);
      continue;
    }
    // Amplitude adjustment: rank of the surrogate value -> the original residual of that rank.
    std::vector<double> resid(n);
    for (std::size_t i = 0; i < n; ++i) resid[i] = y[i] - (a0 + b * static_cast<double>(i));
    sorted = resid;
    std::sort(sorted.begin(), sorted.end());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t p, std::size_t q) { return a[p].real() < a[q].real(); });
    for (std::size_t r = 0; r < n; ++r) o[order[r]] = sorted[r];
    for (std::size_t i = 0; i < n; ++i) o[i] += a0 + b * static_cast<double>(i);
    // Once more on the values themselves (trend restored): each channel keeps exactly its own
    // readings, reading steps included.
    sorted.assign(y.begin(), y.end());
    std::sort(sorted.begin(), sorted.end());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t p, std::size_t q) { return o[p] < o[q]; });
    std::vector<double> v(n);
    for (std::size_t r = 0; r < n; ++r) v[order[r]] = sorted[r];
    o = std::move(v);
  }
}

void phase_randomise(std::vector<std::vector<double>>& series, std::uint64_t seed) {
  std::vector<std::span<const double>> in(series.begin(), series.end());
  std::vector<std::vector<double>> out;
  phase_randomise(in, seed, out);
  series = std::move(out);
}

Trace phase_randomised_trace(const Trace& trace, std::size_t begin, std::size_t end, std::uint64_t seed) {
  Trace t = trace;
  end = std::min(end, t.size());
  if (begin + 4 > end) return t;
  std::vector<std::vector<double>> seg;
  std::vector<std::vector<bool>> missing;
  std::vector<std::size_t> which;
  for (std::size_t c = 0; c < t.channels.size(); ++c) {
    std::vector<double> v(t.channels[c].values.begin() + static_cast<std::ptrdiff_t>(begin),
                          t.channels[c].values.begin() + static_cast<std::ptrdiff_t>(end));
    std::vector<bool> miss(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) miss[i] = !std::isfinite(v[i]);
    if (!fill_linear(v)) continue;
    seg.push_back(std::move(v));
    missing.push_back(std::move(miss));
    which.push_back(c);
  }
  phase_randomise(seg, seed);
  for (std::size_t k = 0; k < which.size(); ++k) {
    auto& dst = t.channels[which[k]].values;
    for (std::size_t i = 0; i < seg[k].size(); ++i)
      dst[begin + i] = missing[k][i] ? std::numeric_limits<double>::quiet_NaN() : seg[k][i];
  }
  return t;
}

Trace block_scrambled_trace(const Trace& trace, std::size_t begin, std::size_t end, std::size_t min_block,
                            std::size_t max_block, std::uint64_t seed) {
  Trace t = trace;
  end = std::min(end, t.size());
  min_block = std::max<std::size_t>(1, min_block);
  max_block = std::max(min_block, max_block);
  if (begin >= end) return t;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> len(min_block, max_block);
  std::vector<std::pair<std::size_t, std::size_t>> blocks;  // [from, to)
  for (std::size_t i = begin; i < end;) {
    const std::size_t e = std::min(end, i + len(rng));
    blocks.emplace_back(i, e);
    i = e;
  }
  std::shuffle(blocks.begin(), blocks.end(), rng);
  for (std::size_t c = 0; c < t.channels.size(); ++c) {
    const auto& src = trace.channels[c].values;
    auto& dst = t.channels[c].values;
    std::size_t w = begin;
    for (const auto& [from, to] : blocks)
      for (std::size_t i = from; i < to; ++i) dst[w++] = src[i];
  }
  return t;
}

}  // namespace epochcast
