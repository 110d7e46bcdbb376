// Null models: phase-randomised (amplitude-adjusted) surrogates and block-scrambled copies.
#include "epochcast/epoch/nulls.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "phase_surrogates.hpp"

namespace epochcast {

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
  detail::PhaseSurrogates(series, amplitude_adjust).make(seed, out);
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
