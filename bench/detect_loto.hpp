// The leave-one-trace-out fold of detect_bench --eval-real (issue 23 item 5): the one detector
// constant chosen on the shared traces, kRegionTypicalAlpha (the agreeing class's bar), is chosen
// again in each fold on the other five traces and the held-out trace is scored with that choice.
//
// The rule, stated before measuring (2026-12-02): candidates {0.5, 0.25, 0.1}; on the five
// traces, keep the candidates with no confident wrong answer on their variants and <= 2 % of
// their null copies found (the null suite's kinds, src/eval/null_copies.hpp); among those, the
// most variants right within 3 %; a tie goes to the smaller alpha (the stricter bar).
#pragma once

#include <fmt/format.h>

#include <array>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../src/epoch/detect_internal.hpp"
#include "detect_eval_real.hpp"
#include "detect_null_real.hpp"

namespace epochcast::eval {

inline constexpr std::array<double, 3> kAlphaCandidates = {0.5, 0.25, 0.1};

struct FoldCell {
  Tally variants;
  int nulls = 0, null_found = 0;
};

inline nlohmann::json run_loto_folds(const std::vector<testing::RealBase>& bases, int null_count) {
  const std::string dir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";
  const auto variants = testing::real_variants();
  // cell[a][trace]
  std::vector<std::vector<FoldCell>> cell(kAlphaCandidates.size(), std::vector<FoldCell>(bases.size()));
  const double was = detail::set_region_typical_alpha(kAlphaCandidates[0]);
  for (std::size_t a = 0; a < kAlphaCandidates.size(); ++a) {
    detail::set_region_typical_alpha(kAlphaCandidates[a]);
    for (std::size_t b = 0; b < bases.size(); ++b) {
      const auto& base = bases[b];
      FoldCell& c = cell[a][b];
      for (const auto& spec : variants)
        for (int seed = 1; seed <= (spec.random ? 3 : 1); ++seed) {
          const auto v = spec.build(base, static_cast<std::uint64_t>(seed), dir + base.name + ".host.csv");
          const auto probe = testing::score_variant(base, v, Segmentation{});
          c.variants.add(base.truth.validation, detect_epochs(v.trace), probe.truth_period_s);
        }
      for (int k = 0; k < null_count; ++k)
        for (std::size_t kind = 0; kind < 2; ++kind) {  // the suite's two kinds
          const auto seg = detect_epochs(null_copy(base, kind, 2000003ULL * static_cast<std::uint64_t>(k) + 41 + kind));
          ++c.nulls;
          c.null_found += seg.found;
        }
    }
  }
  detail::set_region_typical_alpha(was);
  fmt::print("\nleave-one-trace-out: kRegionTypicalAlpha chosen on the other five traces ({} null copies of each\n"
             "suite kind per trace), the held-out trace scored with it. Held-out cells: CWRNG right wrong abst n | nulls found.\n",
             null_count);
  fmt::print("{:<32} {:>6}  {:<29} {:>10}   {}\n", "held out", "alpha", "held-out variants", "its nulls",
             "candidates on the other five (CWRNG/right/null %)");
  nlohmann::json j;
  Tally total;
  int total_nulls = 0, total_null_found = 0;
  for (std::size_t h = 0; h < bases.size(); ++h) {
    std::size_t best = kAlphaCandidates.size();
    int best_right = -1;
    std::string cand;
    for (std::size_t a = 0; a < kAlphaCandidates.size(); ++a) {
      int cw = 0, right = 0, nn = 0, nf = 0;
      for (std::size_t b = 0; b < bases.size(); ++b)
        if (b != h) cw += cell[a][b].variants.conf_wrong, right += cell[a][b].variants.right, nn += cell[a][b].nulls,
                    nf += cell[a][b].null_found;
      const double null_pct = 100.0 * nf / std::max(1, nn);
      cand += fmt::format("  {}: {}/{}/{:.1f}", kAlphaCandidates[a], cw, right, null_pct);
      // >= on right with candidates in decreasing order: a tie goes to the smaller alpha.
      if (cw == 0 && null_pct <= 2.0 && right >= best_right) best = a, best_right = right;
    }
    const auto& name = bases[h].name;
    if (best == kAlphaCandidates.size()) {
      fmt::print("{:<32} {:>6}  no candidate meets the rule;{}\n", name, "-", cand);
      j["folds"][name] = {{"alpha", nullptr}};
      continue;
    }
    const FoldCell& c = cell[best][h];
    fmt::print("{:<32} {:>6}  {:<29} {:>10}  {}\n", name, kAlphaCandidates[best], c.variants.cells(),
               fmt::format("{}/{}", c.null_found, c.nulls), cand);
    j["folds"][name] = {{"alpha", kAlphaCandidates[best]}, {"variants", c.variants.json()},
                        {"nulls", c.nulls}, {"null_found", c.null_found}};
    total.n += c.variants.n, total.right += c.variants.right, total.wrong += c.variants.wrong;
    total.abstain += c.variants.abstain, total.conf_wrong += c.variants.conf_wrong;
    total_nulls += c.nulls, total_null_found += c.null_found;
  }
  fmt::print("{:<32} {:>6}  {:<29} {:>10}\n", "ALL (each trace held out)", "", total.cells(),
             fmt::format("{}/{}", total_null_found, total_nulls));
  j["all"] = {{"variants", total.json()}, {"nulls", total_nulls}, {"null_found", total_null_found}};
  return j;
}

// Runs the folds over the shared traces; with a JSON file (the one --eval-real just wrote), adds
// them to it under "leave_one_trace_out".
inline int run_eval_loto(int null_count, const std::string& json_path) {
  const std::string dir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";
  std::vector<testing::RealBase> bases;
  for (const char* name : testing::kRealTraceNames) bases.push_back(testing::load_real_base(dir, name));
  const auto folds = run_loto_folds(bases, null_count);
  if (!json_path.empty()) {
    nlohmann::json j;
    if (std::ifstream in(json_path); in) j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.is_object()) j = nlohmann::json::object();
    j["leave_one_trace_out"] = folds;
    std::ofstream(json_path) << j.dump(2) << '\n';
  }
  return 0;
}

}  // namespace epochcast::eval
