// Whole-region proposer and its null. docs/detection.md "Whole-region search".
#include "region_search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "boundary_chain.hpp"
#include "null_tail.hpp"
#include "phase_surrogates.hpp"
#include "region_scan.hpp"
#include "surrogate_runner.hpp"

namespace epochcast::detail {
namespace {

// Surrogates scoring as well as the data after which the test stops (p >= ~0.05 by then).
constexpr int kStopAfter = 5;

}  // namespace

RegionSearchResult region_search(const std::vector<std::span<const double>>& channels, const RegionSearchOptions& o) {
  RegionSearchResult H;
  if (channels.empty()) return H;
  const std::size_t n = channels[0].size();
  const double p_lo = std::max(2.0, o.min_period);
  const double p_hi = o.max_period > 0 ? std::min(o.max_period, static_cast<double>(n) / (o.min_epochs - 0.2))
                                       : static_cast<double>(n) / (o.min_epochs - 0.2);
  if (n < 16 || p_lo > p_hi) {
    H.why = "region too short for the whole-region search";
    return H;
  }
  const Excursions ex = region_excursions(channels);
  const std::vector<double>& g = ex.g;
  // The data's best hypothesis: on the even grid, or (o.chain) the best boundary chain.
  const ScanBest b = o.chain ? ScanBest{} : region_scan(ex, o, p_lo, p_hi);
  const ChainBest cb = o.chain ? chain_scan(ex, o, p_lo, p_hi) : ChainBest{};
  const double best_z = o.chain ? cb.z : b.z;
  const double P0 = o.chain ? cb.period : b.period;
  if (P0 <= 0) {
    H.why = "no hypothesis fits the region";
    return H;
  }
  std::vector<double> pos, idx;
  std::size_t inner = 0;
  if (o.chain) {
    // The chain's boundaries are located already; the region's edges are boundaries 0 and
    // K + 1 when the job is idle outside (the chain starts and ends an epoch from them).
    if (o.idle_before) pos.push_back(0.0);
    for (std::size_t k : cb.boundaries) pos.push_back(static_cast<double>(k)), H.evidence.push_back(g[k]);
    if (o.idle_after) pos.push_back(static_cast<double>(n) - 1);
    for (std::size_t k = 0; k < pos.size(); ++k) idx.push_back(static_cast<double>(k + (o.idle_before ? 0 : 1)));
    inner = cb.boundaries.size();
  } else {
    // Located boundaries: the largest change within the slack of each predicted one.
    for (std::size_t k = b.k_first; k <= b.k_last; ++k) {
      const double c = b.phase + b.period * static_cast<double>(k);
      const auto lo = static_cast<std::size_t>(std::max(0.0, std::round(c) - static_cast<double>(b.half)));
      const auto hi = std::min(n - 1, static_cast<std::size_t>(std::round(c)) + b.half);
      std::size_t at = lo;
      for (std::size_t i = lo; i <= hi; ++i)
        if (g[i] > g[at]) at = i;
      pos.push_back(static_cast<double>(at));
      idx.push_back(static_cast<double>(k));
      H.evidence.push_back(g[at]);
    }
    // The region's edges are boundaries when the job is idle outside and they sit where the
    // grid puts boundary 0 / boundary k_last + 1 (within the slack and lead-in).
    if (o.idle_before && b.k_first == 1) {
      pos.insert(pos.begin(), 0.0);
      idx.insert(idx.begin(), 0.0);
    }
    if (o.idle_after) {
      const double end_k = std::round((static_cast<double>(n) - 1 - b.phase) / P0);
      if (static_cast<std::size_t>(end_k) == b.k_last + 1) {
        pos.push_back(static_cast<double>(n) - 1);
        idx.push_back(end_k);
      }
    }
    inner = b.k_last - b.k_first + 1;
  }
  // Least-squares slope through the located boundaries = the mean epoch.
  double period = P0;
  if (pos.size() >= 2) {
    const double mi = std::accumulate(idx.begin(), idx.end(), 0.0) / static_cast<double>(idx.size());
    const double mp = std::accumulate(pos.begin(), pos.end(), 0.0) / static_cast<double>(pos.size());
    double sxy = 0, sxx = 0;
    for (std::size_t i = 0; i < pos.size(); ++i) sxy += (idx[i] - mi) * (pos[i] - mp), sxx += (idx[i] - mi) * (idx[i] - mi);
    if (sxx > 0) period = sxy / sxx;
  }
  // A surrogate's best score by the same statistic, stopping at one as good as the data's.
  const auto scan = [&](const Excursions& x) {
    return o.chain ? chain_scan(x, o, p_lo, p_hi, best_z).z : region_scan(x, o, p_lo, p_hi, best_z).z;
  };
  // Nulls: the same search on surrogates; p = (1 + #surrogates at least as good) / (1 + count).
  int ge_phase = 0, ge_block = 0;
  // A surrogate only has to show one hypothesis as good as the data's: its scan stops there.
  std::mt19937_64 rng(o.seed);
  // Blocks of 1/24-1/8 of the region; for a chain, of half to one and a half of its epochs: a
  // chain re-locks at each join of longer blocks (each holding several intact epochs), so
  // those would keep the very spacing the null is to destroy.
  const auto chain_blk_lo = static_cast<std::size_t>(std::max(2.0, std::round(kChainBlockMin * P0)));
  const auto chain_blk_hi = static_cast<std::size_t>(std::max(3.0, std::round(kChainBlockMax * P0)));
  std::uniform_int_distribution<std::size_t> blk(o.chain ? chain_blk_lo : std::max<std::size_t>(2, n / 24),
                                                 o.chain ? chain_blk_hi : std::max<std::size_t>(3, n / 8));
  // Block-scrambled first (cheap: no transform): the excursion series cut into blocks of
  // 1/24-1/8 of the region and put back in one random order (the two samples at each end stay:
  // the edge ramp). Every event is kept, their spacing is not. Stops at the first as good.
  int done_block = 0;
  std::vector<double> block_max, phase_max;  // each surrogate's best score
  // When the other proposers agree, it goes on after one as good until half are (p > 0.5
  // then): the arbitration also asks whether the hypothesis beats the typical scrambled copy.
  const bool typical = o.agree_period > 0 && std::abs(o.agree_period - period) <= o.agree_tolerance * period;
  const int block_stop = typical ? o.block_surrogates / 2 + 1 : 1;
  // Every copy's order drawn first, in turn from the one generator (the draws of the copies a
  // stop leaves out come after all that are used), then scored on as many cores as are idle
  // and consumed in order (surrogate_runner.hpp): the same sequence as one thread's.
  std::vector<std::vector<std::size_t>> perms(static_cast<std::size_t>(std::max(0, o.block_surrogates)));
  for (auto& perm : perms) {
    std::vector<std::pair<std::size_t, std::size_t>> blocks;
    for (std::size_t i = 2; i + 2 < n;) {
      const std::size_t e = std::min(n - 2, i + blk(rng));
      blocks.emplace_back(i, e);
      i = e;
    }
    std::shuffle(blocks.begin(), blocks.end(), rng);
    perm.resize(n);
    std::iota(perm.begin(), perm.end(), std::size_t{0});
    std::size_t w = 2;
    for (const auto& [from, to] : blocks)
      for (std::size_t i = from; i < to; ++i) perm[w++] = i;
  }
  std::vector<Excursions> xs_of(1);  // per worker
  run_ordered(
      perms.size(), [&](std::size_t helpers) { xs_of.resize(helpers + 1); },
      [&](std::size_t worker, std::size_t s) {
        permute_excursions(ex, perms[s], xs_of[worker]);
        return scan(xs_of[worker]);
      },
      [&](std::size_t, double zs) {
        ++done_block;
        if (zs >= best_z) ++ge_block;
        block_max.push_back(zs);  // the scan's best unless it stopped at one as good
        return ge_block < block_stop;
      });
  int done = 0;
  // When a block-scrambled copy scored as well (not significant), the phase test still says
  // whether the hypothesis beats the typical surrogate: as many as block copies, stopping
  // once half are as good.
  const int limit = ge_block > 0 ? (typical ? o.block_surrogates : 0) : o.surrogates;
  const int stop = ge_block > 0 ? o.block_surrogates / 2 + 1 : kStopAfter;
  // Each channel's trend, transform and sorted values, once for all the surrogates (a copy per
  // helper thread: its scratch is its own).
  std::vector<PhaseSurrogates> phases;
  std::vector<std::vector<std::vector<double>>> sur_of;
  if (limit > 0)
    run_ordered(
        static_cast<std::size_t>(limit),
        [&](std::size_t helpers) {
          const PhaseSurrogates first(channels, o.amplitude_adjust);
          phases.assign(helpers + 1, first);
          sur_of.resize(helpers + 1);
        },
        [&](std::size_t worker, std::size_t s) {
          phases[worker].make(o.seed + 1 + static_cast<std::uint64_t>(s), sur_of[worker]);
          std::vector<std::span<const double>> sp(sur_of[worker].begin(), sur_of[worker].end());
          return scan(region_excursions(sp));
        },
        // Sequential stop: once `stop` surrogates score as well, p cannot come near the
        // threshold; the p reported is the estimate from those done.
        [&](std::size_t, double zs) {
          ++done;
          if (zs >= best_z) ++ge_phase;
          phase_max.push_back(zs);
          return ge_phase < stop;
        });
  H.ok = true;
  H.period_samples = period;
  H.boundaries = pos;
  H.inner = inner;
  H.z = best_z;
  H.p_phase = done > 0 ? (1.0 + ge_phase) / (1.0 + done) : 1.0;
  H.p_block = o.block_surrogates > 0 ? (1.0 + ge_block) / (1.0 + done_block) : 0.0;
  H.p_value = H.p_phase;
  if (ge_phase == 0 && ge_block == 0 && done == o.surrogates && done_block == o.block_surrogates)
    H.p_tail = std::max(gumbel_tail_p(phase_max, best_z), o.block_surrogates > 0 ? gumbel_tail_p(block_max, best_z) : 0.0);
  H.epochs = static_cast<double>(n) / period;
  H.why = fmt::format("whole-region search{}: {} inner boundaries every {:.1f} samples, z = {:.1f} against random "
                      "positions, {}{}",
                      o.chain ? " (boundary chain)" : "", H.inner, period, H.z,
                      done > 0 ? fmt::format("p = {:.2f} against {} phase-randomised surrogates", H.p_value, done)
                               : std::string("phase-randomised surrogates not run"),
                      o.block_surrogates > 0 ? fmt::format(", p = {:.2f} against {} block-scrambled", H.p_block, done_block) : std::string());
  return H;
}

}  // namespace epochcast::detail
