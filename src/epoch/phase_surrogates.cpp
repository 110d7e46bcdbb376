// Phase-randomised surrogates with the per-series work cached. The arithmetic is, operation for
// operation, that of the phase_randomise this replaced (bench/region_search_reference.hpp):
// the identity test compares them bit for bit.
#include "phase_surrogates.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>


namespace epochcast::detail {
namespace {

// Least-squares line of y over its index: (intercept, slope).
std::pair<double, double> surrogate_line_fit(std::span<const double> y) {
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

// Order-preserving unsigned key of a double (sign bit flipped for positives, every bit for
// negatives): u(a) < u(b) when a < b (-0 sorts before +0, NaNs at the ends).
inline std::uint64_t surrogate_sort_key(double v) {
  std::uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  return (u >> 63) ? ~u : (u | (std::uint64_t{1} << 63));
}

// order = the indices 0..n-1 sorted by key, as std::sort of the indices with the comparator
// key[p] < key[q] leaves them. When the keys are all distinct that order is the only sorted
// one, so any sort gives it: here a byte-wise LSD radix sort of (key, index) (the two
// comparison sorts per series were most of a surrogate's cost); with a tie (or a NaN, or both
// zeros) anywhere, the indices are sorted as before, whose order among equal keys is
// std::sort's own.
template <class Key>
void surrogate_rank_order(std::size_t n, Key key, std::vector<std::uint64_t>& keys, std::vector<std::uint64_t>& tmp,
                          std::vector<std::size_t>& idx, std::vector<std::size_t>& idx_tmp,
                          std::vector<std::size_t>& order) {
  keys.resize(n);
  tmp.resize(n);
  idx.resize(n);
  idx_tmp.resize(n);
  std::size_t count[8][256] = {};
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t u = keys[i] = surrogate_sort_key(key(i));
    idx[i] = i;
    for (int d = 0; d < 8; ++d) ++count[d][(u >> (8 * d)) & 0xff];
  }
  for (int d = 0; d < 8; ++d) {
    const int shift = 8 * d;
    if (count[d][(keys.empty() ? 0 : keys[0] >> shift) & 0xff] == n) continue;  // every key shares this byte
    std::size_t at[256], sum = 0;
    for (int b = 0; b < 256; ++b) at[b] = sum, sum += count[d][b];
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t to = at[(keys[i] >> shift) & 0xff]++;
      tmp[to] = keys[i];
      idx_tmp[to] = idx[i];
    }
    keys.swap(tmp);
    idx.swap(idx_tmp);
  }
  bool distinct = true;
  for (std::size_t i = 1; i < n && distinct; ++i) distinct = key(idx[i - 1]) < key(idx[i]);
  if (distinct) {
    std::copy(idx.begin(), idx.end(), order.begin());
    return;
  }
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t p, std::size_t q) { return key(p) < key(q); });
}

}  // namespace

PhaseSurrogates::PhaseSurrogates(const std::vector<std::span<const double>>& series, bool amplitude_adjust)
    : amplitude_adjust_(amplitude_adjust) {
  if (series.empty()) return;
  n_ = series[0].size();
  while (m_ < n_) m_ <<= 1;
  plan_ = fft::Plan(m_);
  series_.resize(series.size());
  for (std::size_t s = 0; s < series.size(); ++s) {
    Series& S = series_[s];
    S.y = series[s];
    if (n_ < 4) continue;
    const auto [a0, b] = surrogate_line_fit(S.y);
    S.a0 = a0;
    S.b = b;
    S.spectrum.resize(m_);
    for (std::size_t i = 0; i < m_; ++i)
      S.spectrum[i] = i < n_ ? std::complex<double>(S.y[i] - (a0 + b * static_cast<double>(i))) : std::complex<double>(0);
    plan_.transform(S.spectrum, false);
    if (!amplitude_adjust_) continue;
    S.sorted_resid.resize(n_);
    for (std::size_t i = 0; i < n_; ++i) S.sorted_resid[i] = S.y[i] - (a0 + b * static_cast<double>(i));
    std::sort(S.sorted_resid.begin(), S.sorted_resid.end());
    S.sorted_y.assign(S.y.begin(), S.y.end());
    std::sort(S.sorted_y.begin(), S.sorted_y.end());
  }
}

void PhaseSurrogates::make(std::uint64_t seed, std::vector<std::vector<double>>& out) {
  using cd = std::complex<double>;
  out.resize(series_.size());
  if (series_.empty()) return;
  const std::size_t n = n_, m = m_;
  // One set of random phases for every series (the cross-spectra are kept).
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 2 * M_PI);
  rot_.assign(m, cd(1));
  for (std::size_t k = 1; k < (m + 1) / 2; ++k) {
    rot_[k] = std::polar(1.0, u(rng));
    rot_[m - k] = std::conj(rot_[k]);
  }
  a_.resize(m);
  order_.resize(n);
  for (std::size_t s = 0; s < series_.size(); ++s) {
    const Series& S = series_[s];
    auto& o = out[s];
    o.assign(n, 0.0);
    if (n < 4) {
      o.assign(S.y.begin(), S.y.end());
      continue;
    }
    const double a0 = S.a0, b = S.b;
    for (std::size_t k = 0; k < m; ++k) a_[k] = S.spectrum[k] * rot_[k];
    plan_.transform(a_, true);
    if (!amplitude_adjust_) {
      const double inv = 1.0 / static_cast<double>(m);
      for (std::size_t i = 0; i < n; ++i) o[i] = a_[i].real() * inv + a0 + b * static_cast<double>(i);
      continue;
    }
    // Amplitude adjustment: rank of the surrogate value -> the original residual of that rank.
    surrogate_rank_order(n, [&](std::size_t i) { return a_[i].real(); }, keys_, keys_tmp_, idx_, idx_tmp_, order_);
    for (std::size_t r = 0; r < n; ++r) o[order_[r]] = S.sorted_resid[r];
    for (std::size_t i = 0; i < n; ++i) o[i] += a0 + b * static_cast<double>(i);
    // Once more on the values themselves (trend restored): each series keeps exactly its own
    // readings, reading steps included.
    surrogate_rank_order(n, [&](std::size_t i) { return o[i]; }, keys_, keys_tmp_, idx_, idx_tmp_, order_);
    v_.resize(n);
    for (std::size_t r = 0; r < n; ++r) v_[order_[r]] = S.sorted_y[r];
    o.swap(v_);
  }
}

}  // namespace epochcast::detail
