// detect_bench --reliability [--seeds N] [--json FILE] (issue 23 item 3): for each confidence
// level, how often an answer at that level is right within 5 %, on three sets:
//   synthetic   the --eval-real varied set (5-15 % epoch-length variation, 4/5/8 epochs, subtle
//               and 500 ms cases) and the calibration set (2/12 % variation, 3/6/12 epochs, CPU
//               loader), each with its no-signature twin; N seeds;
//   real        every variant of every shared trace (src/eval/variants.hpp; random ones x 3);
//   few-epoch   3, 4 and 5 epochs of a subtle signature (dip 8 % and 15 %, variation 2 % and
//               8 %) and their null twins; N seeds.
// Every answer is taken at --min-confidence 0 (what each level would mean if the bar were set
// there), binned by 0.05. A find on a run without a signature is never right.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "detect_eval_real.hpp"

namespace epochcast::eval {

inline std::vector<SynthCase> few_epoch_subtle() {
  std::vector<SynthCase> out;
  for (int epochs : {3, 4, 5})
    for (double depth : {0.08, 0.15})
      for (double jit : {0.02, 0.08}) {
        SyntheticSpec s;
        s.epochs = epochs, s.event_depth = depth, s.period_jitter = jit;
        out.push_back({fmt::format("{} epochs, dip {:.0f} %, {:.0f} % variation", epochs, 100 * depth, 100 * jit), s});
      }
  for (int epochs : {3, 4, 5}) {
    SyntheticSpec z;
    z.epochs = epochs, z.event_depth = 0, z.period_jitter = 0.05;
    out.push_back({fmt::format("NULL {} epochs", epochs), z});
  }
  return out;
}

inline std::vector<SynthCase> calibration_synthetic() {
  auto cases = varied_synthetic();
  for (double jit : {0.02, 0.12})
    for (int epochs : {3, 6, 12}) {
      SyntheticSpec s;
      s.epochs = epochs, s.period_jitter = jit;
      cases.push_back({fmt::format("cal jitter {:.0f} %, {} epochs", 100 * jit, epochs), s});
      SyntheticSpec c = s;
      c.event_at_start = true, c.event_depth = 0.5;
      cases.push_back({fmt::format("cal CPU loader {:.0f} %, {} epochs", 100 * jit, epochs), c});
      SyntheticSpec z = s;
      z.event_depth = 0;
      cases.push_back({fmt::format("cal NULL {:.0f} %, {} epochs", 100 * jit, epochs), z});
    }
  return cases;
}

inline int run_reliability(int seeds, const std::string& json_path) {
  struct Bin {
    int n = 0, right = 0;
  };
  constexpr std::size_t kSets = 3;
  const char* const set_names[kSets] = {"synthetic", "real variants", "few-epoch subtle"};
  std::map<int, std::array<Bin, kSets>> bins;  // floor(confidence * 20)
  std::array<int, kSets> runs{};
  DetectOptions o;
  o.min_confidence = 0;
  auto add = [&](std::size_t set, const Segmentation& seg, bool sig, double truth) {
    ++runs[set];
    if (!seg.found) return;
    auto& b = bins[static_cast<int>(std::floor(seg.confidence * 20 + 1e-9))][set];
    ++b.n;
    b.right += sig && std::abs(seg.period_s - truth) / truth <= 0.05;
  };
  auto synth = [&](std::size_t set, const std::vector<SynthCase>& cases, std::uint64_t base_seed) {
    for (const auto& c : cases)
      for (int seed = 0; seed < seeds; ++seed) {
        const auto s = make_synthetic_trace(c.spec, base_seed + 104729ULL * static_cast<std::uint64_t>(seed));
        add(set, detect_epochs(s.trace, o), c.spec.event_depth != 0 && c.spec.boundary_signature, s.truth.period_s);
      }
  };
  synth(0, calibration_synthetic(), 9001);
  const std::string dir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";
  for (const char* name : testing::kRealTraceNames) {
    const auto base = testing::load_real_base(dir, name);
    for (const auto& spec : testing::real_variants())
      for (int seed = 1; seed <= (spec.random ? 3 : 1); ++seed) {
        const auto v = spec.build(base, static_cast<std::uint64_t>(seed), dir + base.name + ".host.csv");
        const auto probe = testing::score_variant(base, v, Segmentation{});
        add(1, detect_epochs(v.trace, o), base.truth.validation, probe.truth_period_s);
      }
  }
  synth(2, few_epoch_subtle(), 31337);
  fmt::print("detect_bench --reliability ({} seeds): answers at --min-confidence 0 binned by confidence; cells =\n"
             "found / right within 5 % (%). Runs: synthetic {}, real variants {}, few-epoch subtle {}.\n\n",
             seeds, runs[0], runs[1], runs[2]);
  fmt::print("{:<14}", "confidence");
  for (const char* s : set_names) fmt::print(" {:>24}", s);
  fmt::print("\n");
  nlohmann::json j;
  j["seeds"] = seeds;
  for (std::size_t s = 0; s < kSets; ++s) j["runs"][set_names[s]] = runs[s];
  std::array<Bin, kSets> at_bar{};
  for (const auto& [k, row] : bins) {
    fmt::print("{:<14}", fmt::format("[{:.2f},{:.2f})", k / 20.0, (k + 1) / 20.0));
    nlohmann::json jr;
    jr["from"] = k / 20.0;
    for (std::size_t s = 0; s < kSets; ++s) {
      const Bin& b = row[s];
      fmt::print(" {:>24}", b.n ? fmt::format("{} / {} ({:.1f} %)", b.n, b.right, 100.0 * b.right / b.n) : "-");
      jr[set_names[s]] = {{"found", b.n}, {"right_5pct", b.right}};
      if (k >= 10) at_bar[s].n += b.n, at_bar[s].right += b.right;
    }
    j["bins"].push_back(jr);
    fmt::print("\n");
  }
  fmt::print("{:<14}", ">= 0.5 (bar)");
  for (std::size_t s = 0; s < kSets; ++s)
    fmt::print(" {:>24}", at_bar[s].n ? fmt::format("{} / {} ({:.1f} %)", at_bar[s].n, at_bar[s].right,
                                                    100.0 * at_bar[s].right / at_bar[s].n)
                                      : "-");
  fmt::print("\n");
  if (!json_path.empty()) std::ofstream(json_path) << j.dump(2) << '\n';
  return 0;
}

}  // namespace epochcast::eval
