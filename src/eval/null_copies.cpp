#include "eval/null_copies.hpp"

#include "epochcast/epoch/nulls.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <numeric>
#include <random>
#include <unsupported/Eigen/FFT>
#include <vector>

namespace epochcast::eval {
namespace {

using cd = std::complex<double>;

// The draw of the new length uses its own stream so both copies of a seed agree on it.
std::size_t draw_length(const NullRegion& r, std::uint64_t seed) {
  const std::size_t n = r.end - r.begin;
  if (r.keep_length || !(r.period_samples > 0)) return n;
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  std::uniform_real_distribution<double> u(-kNullLengthSpread, kNullLengthSpread);
  const double len = static_cast<double>(n) + u(rng) * r.period_samples;
  return static_cast<std::size_t>(std::max(8.0, std::round(len)));
}

// The trace with samples [begin, end) replaced by `region` (one vector per channel, all of one
// length): samples before keep their times, the region is stamped at the region's median
// interval, samples after are shifted by the change of length.
Trace splice(const Trace& t, std::size_t begin, std::size_t end, const std::vector<std::vector<double>>& region) {
  Trace out;
  out.source = t.source, out.format = t.format, out.gpu = t.gpu, out.gpus_in_source = t.gpus_in_source;
  out.first_timestamp = t.first_timestamp, out.start_unix_s = t.start_unix_s;
  const std::size_t len = region.empty() ? end - begin : region[0].size();
  std::vector<double> gaps;
  for (std::size_t i = begin + 1; i < end; ++i) gaps.push_back(t.time_s[i] - t.time_s[i - 1]);
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
  const double dt = gaps.empty() ? t.median_interval_s() : gaps[gaps.size() / 2];
  const double t0 = begin < t.size() ? t.time_s[begin] : (t.time_s.empty() ? 0.0 : t.time_s.back() + dt);
  for (std::size_t i = 0; i < begin; ++i) out.time_s.push_back(t.time_s[i]);
  for (std::size_t j = 0; j < len; ++j) out.time_s.push_back(t0 + dt * static_cast<double>(j));
  const double shift = (static_cast<double>(len) - static_cast<double>(end - begin)) * dt;
  for (std::size_t i = end; i < t.size(); ++i) out.time_s.push_back(t.time_s[i] + shift);
  for (std::size_t c = 0; c < t.channels.size(); ++c) {
    const auto& src = t.channels[c].values;
    Channel ch{t.channels[c].metric, {}};
    ch.values.reserve(out.time_s.size());
    ch.values.insert(ch.values.end(), src.begin(), src.begin() + static_cast<std::ptrdiff_t>(begin));
    ch.values.insert(ch.values.end(), region[c].begin(), region[c].end());
    ch.values.insert(ch.values.end(), src.begin() + static_cast<std::ptrdiff_t>(end), src.end());
    out.channels.push_back(std::move(ch));
  }
  return out;
}


// out[i] = the value of `sorted` at the rank of key[i] among `key` (rank scaled to sorted's size):
// the copy takes the original's readings, reading steps included.
std::vector<double> rank_map(const std::vector<double>& key, const std::vector<double>& sorted) {
  const std::size_t n = key.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t p, std::size_t q) { return key[p] < key[q]; });
  std::vector<double> out(n);
  const double scale = n > 1 ? static_cast<double>(sorted.size() - 1) / static_cast<double>(n - 1) : 0;
  for (std::size_t r = 0; r < n; ++r)
    out[order[r]] = sorted[static_cast<std::size_t>(std::lround(static_cast<double>(r) * scale))];
  return out;
}

}  // namespace

std::size_t null_region_length(const NullRegion& region, std::uint64_t seed) { return draw_length(region, seed); }

Trace line_free_phase_copy(const Trace& trace, const NullRegion& r, std::uint64_t seed) {
  const std::size_t begin = std::min(r.begin, trace.size()), end = std::min(r.end, trace.size());
  if (begin + 8 > end) return trace;
  const std::size_t n = end - begin;
  const std::size_t len = draw_length({begin, end, r.period_samples, r.keep_length}, seed);
  std::size_t m = 1;
  while (m < std::max(n, len)) m <<= 1;
  // Line spacing 1 / period, in bins of the m-point transform.
  const auto half = static_cast<std::size_t>(
      std::max(1.0, std::ceil(static_cast<double>(m) / std::max(2.0, r.period_samples))));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 2 * M_PI);
  std::vector<double> phi(m / 2 + 1, 0.0);
  for (double& p : phi) p = u(rng);
  Eigen::FFT<double> fft;
  std::vector<std::vector<double>> region(trace.channels.size());
  for (std::size_t c = 0; c < trace.channels.size(); ++c) {
    std::vector<double> y(trace.channels[c].values.begin() + static_cast<std::ptrdiff_t>(begin),
                          trace.channels[c].values.begin() + static_cast<std::ptrdiff_t>(end));
    if (!fill_linear(y)) {
      region[c].assign(len, std::numeric_limits<double>::quiet_NaN());
      continue;
    }
    // Trend: least-squares line, removed before and restored (stretched to the new length) after.
    const double mx = (static_cast<double>(n) - 1) / 2;
    const double my = std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(n);
    double sxy = 0, sxx = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double dx = static_cast<double>(i) - mx;
      sxy += dx * (y[i] - my), sxx += dx * dx;
    }
    const double slope = sxx > 0 ? sxy / sxx : 0;
    std::vector<cd> in(m, cd(0)), spec;
    std::vector<double> resid(n);
    for (std::size_t i = 0; i < n; ++i) {
      resid[i] = y[i] - (my + slope * (static_cast<double>(i) - mx));
      in[i] = resid[i];
    }
    fft.fwd(spec, in);
    std::vector<double> power(m / 2 + 1);
    for (std::size_t k = 0; k <= m / 2; ++k) power[k] = std::norm(spec[k]);
    std::vector<double> prefix(m / 2 + 2, 0.0);
    for (std::size_t k = 1; k <= m / 2; ++k) prefix[k + 1] = prefix[k] + power[k];  // DC left out
    std::vector<cd> out(m, cd(0));
    for (std::size_t k = 1; k <= m / 2; ++k) {
      const std::size_t lo = k > half ? k - half : 1, hi = std::min(m / 2, k + half);
      const double mean = (prefix[hi + 1] - prefix[lo]) / static_cast<double>(hi - lo + 1);
      const double a = std::sqrt(mean);
      const double theta = std::arg(spec[k]) + phi[k];
      out[k] = std::polar(a, theta);
      if (k == m / 2) out[k] = cd(a * std::cos(theta), 0);
      else out[m - k] = std::conj(out[k]);
    }
    std::vector<cd> back;
    fft.inv(back, out);
    std::vector<double> g(len);
    for (std::size_t i = 0; i < len; ++i) g[i] = back[i].real();
    std::vector<double> sorted_resid = resid, sorted_y = y;
    std::sort(sorted_resid.begin(), sorted_resid.end());
    std::sort(sorted_y.begin(), sorted_y.end());
    g = rank_map(g, sorted_resid);
    const double stretch = len > 1 ? static_cast<double>(n - 1) / static_cast<double>(len - 1) : 0;
    for (std::size_t i = 0; i < len; ++i) g[i] += my + slope * (static_cast<double>(i) * stretch - mx);
    region[c] = rank_map(g, sorted_y);
  }
  return splice(trace, begin, end, region);
}

Trace block_bootstrap_copy(const Trace& trace, const NullRegion& r, std::uint64_t seed) {
  const std::size_t begin = std::min(r.begin, trace.size()), end = std::min(r.end, trace.size());
  if (begin + 8 > end) return trace;
  const std::size_t n = end - begin;
  const std::size_t len = draw_length({begin, end, r.period_samples, r.keep_length}, seed);
  const double p = std::max(4.0, r.period_samples);
  const auto lo = static_cast<std::size_t>(std::max(1.0, std::round(p / 4)));
  const auto hi = std::min(n, std::max(lo + 1, static_cast<std::size_t>(std::round(3 * p / 4))));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> block_len(std::min(lo, hi), hi);
  std::vector<std::pair<std::size_t, std::size_t>> blocks;  // [from, to) within the region
  for (std::size_t filled = 0; filled < len;) {
    const std::size_t l = std::min(block_len(rng), len - filled);
    std::uniform_int_distribution<std::size_t> start(0, n - l);
    const std::size_t s = start(rng);
    blocks.emplace_back(s, s + l);
    filled += l;
  }
  std::vector<std::vector<double>> region(trace.channels.size());
  for (std::size_t c = 0; c < trace.channels.size(); ++c) {
    const auto& src = trace.channels[c].values;
    region[c].reserve(len);
    for (const auto& [from, to] : blocks)
      for (std::size_t i = from; i < to; ++i) region[c].push_back(src[begin + i]);
  }
  return splice(trace, begin, end, region);
}

}  // namespace epochcast::eval
