// Inputs for the whole-region search as the region proposer builds them (each channel's
// readings over a region, averaged into blocks so at most 512 values remain), from the shared
// H200 traces (with and without the host log; the training region and views of it: with its
// start-up and tail, cropped, decimated), their phase-randomised and block-scrambled copies,
// and synthetic runs (varied epoch lengths, no signature). Each case carries the search options
// the proposer would pass, in a few variants (anchors, agreement, amplitude adjustment).
// Shared by bench/region_search_bench.cpp and tests/unit/epoch/region_search_identity_test.cpp.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "../src/epoch/region_search.hpp"
#include "epochcast/epoch/nulls.hpp"
#include "eval/synthetic.hpp"
#include "eval/variants.hpp"

namespace epochcast::region_cases {

struct Case {
  std::string name;
  std::vector<std::vector<double>> channels;
  detail::RegionSearchOptions options;
  [[nodiscard]] std::vector<std::span<const double>> spans() const { return {channels.begin(), channels.end()}; }
};

// A region's channels and the rows each of their values averages.
struct RegionChannels {
  std::vector<std::vector<double>> channels;
  std::size_t block = 1;
};

// Rows [b, e) of every channel with any finite value, gaps filled linearly, averaged in blocks
// of 2^l rows so that at most `level_max` values remain.
inline RegionChannels region_channels(const Trace& t, std::size_t b, std::size_t e, std::size_t level_max = 512) {
  RegionChannels rc;
  auto& out = rc.channels;
  e = std::min(e, t.size());
  if (b >= e) return rc;
  std::size_t& block = rc.block;
  while ((e - b) / block > level_max) block <<= 1;
  const std::size_t len = (e - b) / block;
  for (const auto& c : t.channels) {
    std::vector<double> v(c.values.begin() + static_cast<std::ptrdiff_t>(b),
                          c.values.begin() + static_cast<std::ptrdiff_t>(e));
    if (!fill_linear(v)) continue;
    std::vector<double> r(len, 0.0);
    for (std::size_t i = 0; i < len; ++i) {
      double acc = 0;
      for (std::size_t j = i * block; j < (i + 1) * block; ++j) acc += v[j];
      r[i] = acc / static_cast<double>(block);
    }
    out.push_back(std::move(r));
  }
  return rc;
}

inline std::pair<std::size_t, std::size_t> rows_between(const Trace& t, double from_s, double to_s) {
  const auto b = std::lower_bound(t.time_s.begin(), t.time_s.end(), from_s) - t.time_s.begin();
  const auto e = std::upper_bound(t.time_s.begin(), t.time_s.end(), to_s) - t.time_s.begin();
  return {static_cast<std::size_t>(b), static_cast<std::size_t>(e)};
}

// The options the proposer passes (region_proposer.cpp), `period` the agreeing period in
// region samples (0: none).
inline detail::RegionSearchOptions proposer_options(bool idle_before, bool idle_after, double period) {
  detail::RegionSearchOptions o;
  o.min_period = 6;
  o.min_epochs = 2;
  o.idle_before = idle_before;
  o.idle_after = idle_after;
  o.surrogates = 99;
  o.block_surrogates = 19;
  o.agree_period = period;
  o.agree_tolerance = 0.05;
  return o;
}

// Four option variants per input: anchored both ends with the true period agreeing; anchored
// both ends, no agreement; not anchored; anchored at the start only without amplitude
// adjustment and another seed.
inline void add_variants(std::vector<Case>& out, const std::string& name, const RegionChannels& rc,
                         double rows_per_period, bool quick) {
  const auto& ch = rc.channels;
  const double period = rows_per_period / static_cast<double>(rc.block);
  if (ch.empty() || ch[0].size() < 16) return;
  const auto add = [&](const std::string& tag, detail::RegionSearchOptions o) {
    out.push_back({name + "/" + tag, ch, o});
  };
  add("anchored+agree", proposer_options(true, true, period));
  if (quick) return;
  add("anchored", proposer_options(true, true, 0));
  add("free", proposer_options(false, false, period));
  auto o = proposer_options(true, false, 0);
  o.amplitude_adjust = false;
  o.seed = 0x1234;
  add("start+plain", o);
}

// quick: one option set per input (the benchmark's mix); otherwise four.
inline std::vector<Case> make_cases(const std::string& h200_dir, bool quick) {
  std::vector<Case> out;
  for (const char* name : testing::kRealTraceNames) {
    const auto base = testing::load_real_base(h200_dir, name);
    for (const Trace* t : {&base.with_host, &base.gpu_only}) {
      const std::string tag = fmt::format("{}/{}", name, t == &base.with_host ? "host" : "gpu");
      const double dt = t->median_interval_s();
      const auto [b, e] = rows_between(*t, base.train_begin_s, base.train_end_s);
      const double period = base.truth.period_s / dt;
      add_variants(out, tag + "/region", region_channels(*t, b, e), period, quick);
      if (t != &base.with_host) continue;
      // The whole trace (idle head and tail inside: the search's region edges not at the job's).
      add_variants(out, tag + "/whole", region_channels(*t, 0, t->size()), period, quick);
      if (quick) continue;
      // Cropped: a third of an epoch off each end.
      const auto crop = static_cast<std::size_t>(period / 3);
      add_variants(out, tag + "/cropped", region_channels(*t, b + crop, e - std::min(e - b, crop)), period, false);
      // Decimated 3x (every third row).
      Trace d = testing::decimate(testing::whole(*t), 3).trace;
      const auto [db, de] = rows_between(d, base.train_begin_s, base.train_end_s);
      add_variants(out, tag + "/decimated3", region_channels(d, db, de), period / 3, false);
      // Nulls: the training region phase-randomised, and block-scrambled.
      for (std::uint64_t seed = 1; seed <= 2; ++seed) {
        const Trace p = phase_randomised_trace(*t, b, e, seed);
        add_variants(out, fmt::format("{}/phase{}", tag, seed), region_channels(p, b, e), period, false);
        const auto blk = static_cast<std::size_t>(std::max(2.0, period / 2));
        const Trace s = block_scrambled_trace(*t, b, e, blk / 2, blk, seed);
        add_variants(out, fmt::format("{}/scramble{}", tag, seed), region_channels(s, b, e), period, false);
      }
    }
  }
  // Synthetic: 5 % and 12 % epoch-length variation, 4 and 20 epochs, a run without signature.
  struct Spec {
    const char* name;
    int epochs;
    double jitter, depth;
  };
  for (const Spec sp : {Spec{"syn4_j5", 4, 0.05, 0.3}, Spec{"syn20_j12", 20, 0.12, 0.2}, Spec{"syn6_none", 6, 0.01, 0.0},
                        Spec{"syn5_subtle", 5, 0.08, 0.08}}) {
    for (std::uint64_t seed = 1; seed <= (quick ? 1u : 2u); ++seed) {
      SyntheticSpec s;
      s.epochs = sp.epochs;
      s.period_jitter = sp.jitter;
      s.event_depth = sp.depth;
      const auto syn = make_synthetic_trace(s, seed);
      const auto& ep = syn.truth.epochs;
      const auto [b, e] = rows_between(syn.trace, ep.front().start_s, ep.back().end_s);
      add_variants(out, fmt::format("{}/{}", sp.name, seed), region_channels(syn.trace, b, e),
                   syn.truth.period_s / s.interval_s, quick);
    }
  }
  return out;
}

}  // namespace epochcast::region_cases
