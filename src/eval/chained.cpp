#include "eval/chained.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace epochcast::eval {
namespace {

// First row at or after t.
std::size_t row_at(const Trace& tr, double t) {
  return static_cast<std::size_t>(std::lower_bound(tr.time_s.begin(), tr.time_s.end(), t) - tr.time_s.begin());
}

}  // namespace

ChainedRun chain_real_epochs(const testing::RealBase& base, const ChainSpec& spec, std::uint64_t seed) {
  const Trace& src = base.with_host;
  if (spec.epochs < 1) throw std::runtime_error("chain: epochs must be >= 1");
  std::vector<std::pair<std::size_t, std::size_t>> real;  // rows [from, to) of each real epoch
  for (const auto& e : base.truth.epochs) {
    const std::size_t a = row_at(src, e.start_s), b = row_at(src, e.end_s);
    if (b < a + 8) throw std::runtime_error(base.name + ": an epoch with fewer than 8 samples");
    real.emplace_back(a, b);
  }
  const double dt = src.median_interval_s();
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> gauss(0, spec.length_cv);
  std::uniform_int_distribution<std::size_t> pick(0, real.size() - 1);

  // Rows of the source, in output order.
  std::vector<std::size_t> rows;
  for (std::size_t i = 0; i < real.front().first; ++i) rows.push_back(i);
  ChainedRun run;
  run.has_signature = base.truth.validation;
  for (int k = 0; k < spec.epochs; ++k) {
    // A real run warms up once and winds down once: the source's first epoch (its warm-up
    // ramp: mobilenetv2's power 311 -> 338 W, 52 -> 53 C) opens the chain and its last closes
    // it; the epochs between are drawn from its inner epochs. Drawn anywhere, every fifth
    // boundary of a 100-epoch chain carried a warm-up, a signature no real run has there.
    std::size_t which = pick(rng);
    if (k == 0) which = 0;
    else if (k + 1 == spec.epochs && spec.epochs > 1) which = real.size() - 1;
    else if (real.size() >= 3) which = 1 + which % (real.size() - 2);
    const auto [a, b] = real[which];
    const std::size_t n = b - a;
    const double e = std::clamp(gauss(rng), -3 * spec.length_cv, 3 * spec.length_cv);
    const auto out_n = static_cast<std::size_t>(std::max(2.0, std::round(static_cast<double>(n) * (1 + e))));
    const double start = static_cast<double>(rows.size()) * dt;
    for (std::size_t j = 0; j < out_n; ++j)
      rows.push_back(a + std::min(n - 1, static_cast<std::size_t>(static_cast<double>(j) * static_cast<double>(n) /
                                                                   static_cast<double>(out_n))));
    run.epochs.push_back({start, static_cast<double>(rows.size()) * dt});
  }
  for (std::size_t i = real.back().second; i < src.size(); ++i) rows.push_back(i);

  Trace& t = run.trace;
  t.source = base.name + ".chained", t.format = src.format, t.gpu = src.gpu;
  t.start_unix_s = src.start_unix_s, t.first_timestamp = src.first_timestamp;
  t.time_s.resize(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) t.time_s[i] = static_cast<double>(i) * dt;
  for (const auto& c : src.channels) {
    Channel& o = t.channel(c.metric);
    for (std::size_t i = 0; i < rows.size(); ++i) o.values[i] = c.values[rows[i]];
  }
  double sum = 0;
  for (const auto& e : run.epochs) sum += e.end_s - e.start_s;
  run.period_s = sum / static_cast<double>(run.epochs.size());
  return run;
}

}  // namespace epochcast::eval
