// detect_bench --null-real [--count N] [--verbose] [--json FILE] (issue 23, "a null suite that
// is a null"): N copies of each kind of every shared trace's training region (truth.json's first
// start to last end); every find is a false find.
//
// The suite's kinds (src/eval/null_copies.hpp; rules stated there before measuring): line-free
// phase-randomised copies and block-bootstrap copies, the region's length redrawn within
// +/- 0.5 epoch. Diagnostics beside them: the same two with the length kept (N x period: span / N
// still gives the period), and the first suite's copies (the detector's own full-spectrum phase
// surrogate and block scramble, include/epochcast/epoch/nulls.hpp), which keep the period.
// Cells: found at the default bar (0.5) / found at --min-confidence 0.3 / finds within 5 % of
// the true period.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "epochcast/epoch/detect.hpp"
#include "epochcast/epoch/nulls.hpp"
#include "eval/null_copies.hpp"
#include "eval/variants.hpp"

namespace epochcast::eval {

struct NullKind {
  const char* name;
  bool suite;  // counted against the <= 2 % target
};
inline constexpr std::array<NullKind, 6> kNullKinds = {{{"phase line-free", true},
                                                         {"bootstrap", true},
                                                         {"phase line-free, length kept", false},
                                                         {"bootstrap, length kept", false},
                                                         {"phase full spectrum (first suite)", false},
                                                         {"block scramble (first suite)", false}}};

inline Trace null_copy(const testing::RealBase& base, std::size_t kind, std::uint64_t seed) {
  const Trace& t = base.with_host;
  const auto b = static_cast<std::size_t>(std::lower_bound(t.time_s.begin(), t.time_s.end(), base.train_begin_s) -
                                          t.time_s.begin());
  const auto e = static_cast<std::size_t>(std::upper_bound(t.time_s.begin(), t.time_s.end(), base.train_end_s) -
                                          t.time_s.begin());
  const double per = base.truth.period_s / t.median_interval_s();
  const NullRegion r{b, e, per, kind == 2 || kind == 3};
  switch (kind) {
    case 0:
    case 2: return line_free_phase_copy(t, r, seed);
    case 1:
    case 3: return block_bootstrap_copy(t, r, seed);
    case 4: return phase_randomised_trace(t, b, e, seed);
    default: {
      const auto p = static_cast<std::size_t>(std::max(1.0, per));
      return block_scrambled_trace(t, b, e, std::max<std::size_t>(1, p / 4), std::max<std::size_t>(2, 3 * p / 4), seed);
    }
  }
}

inline int run_null_real(int count, bool verbose, const std::string& json_path) {
  const std::string dir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";
  fmt::print("detect_bench --null-real: {} copies of each kind of each shared trace's training region; every find\n"
             "is false. Cells: found (default bar 0.5) / found at --min-confidence 0.3 / finds within 5 % of the\n"
             "true period. The suite = the first two kinds (target: <= 2 % found, any confidence).\n\n",
             count);
  DetectOptions low;
  low.min_confidence = 0.3;
  struct Cell {
    int n = 0, found = 0, found_low = 0, at_truth = 0;
  };
  std::vector<std::array<Cell, kNullKinds.size()>> rows;
  nlohmann::json j;
  j["count"] = count;
  fmt::print("{:<30}", "trace");
  for (const auto& k : kNullKinds) fmt::print(" {:>16}", std::string(k.name).substr(0, 16));
  fmt::print("\n");
  std::array<Cell, kNullKinds.size()> total{};
  for (const char* name : testing::kRealTraceNames) {
    const auto base = testing::load_real_base(dir, name);
    std::array<Cell, kNullKinds.size()> row{};
    for (int k = 0; k < count; ++k)
      for (std::size_t kind = 0; kind < kNullKinds.size(); ++kind) {
        const std::uint64_t seed = 1000003ULL * static_cast<std::uint64_t>(k) + 29 + kind;
        const Trace t = null_copy(base, kind, seed);
        const auto seg = detect_epochs(t);
        const auto seg_low = detect_epochs(t, low);
        Cell& c = row[kind];
        ++c.n;
        c.found += seg.found;
        c.found_low += seg_low.found;
        const auto& hit = seg.found ? seg : seg_low;
        if (hit.found && std::abs(hit.period_s - base.truth.period_s) <= 0.05 * base.truth.period_s) ++c.at_truth;
        if (verbose && hit.found)
          fmt::print("    {} / {} #{}: {:.3f} s (truth {:.3f}) conf {:.2f} | {}\n", name, kNullKinds[kind].name, k,
                     hit.period_s, base.truth.period_s, hit.confidence, hit.reason);
      }
    fmt::print("{:<30}", name);
    for (std::size_t kind = 0; kind < kNullKinds.size(); ++kind) {
      const Cell& c = row[kind];
      fmt::print(" {:>16}", fmt::format("{}/{}/{}", c.found, c.found_low, c.at_truth));
      Cell& t = total[kind];
      t.n += c.n, t.found += c.found, t.found_low += c.found_low, t.at_truth += c.at_truth;
      j["traces"][name][kNullKinds[kind].name] = {{"copies", c.n}, {"found", c.found}, {"found_at_0_3", c.found_low},
                                                  {"within_5pct_of_truth", c.at_truth}};
    }
    fmt::print("\n");
  }
  fmt::print("{:<30}", "ALL");
  for (const auto& c : total) fmt::print(" {:>16}", fmt::format("{}/{}/{}", c.found, c.found_low, c.at_truth));
  fmt::print("\n\n");
  int suite_n = 0, suite_found = 0, suite_low = 0;
  for (std::size_t kind = 0; kind < kNullKinds.size(); ++kind) {
    const Cell& c = total[kind];
    fmt::print("{:<36} {:>5} of {:>5} found ({:.2f} %), {} at --min-confidence 0.3, {} within 5 % of the truth\n",
               kNullKinds[kind].name, c.found, c.n, 100.0 * c.found / std::max(1, c.n), c.found_low, c.at_truth);
    j["total"][kNullKinds[kind].name] = {{"copies", c.n}, {"found", c.found}, {"found_at_0_3", c.found_low},
                                         {"within_5pct_of_truth", c.at_truth}, {"suite", kNullKinds[kind].suite}};
    if (kNullKinds[kind].suite) suite_n += c.n, suite_found += c.found, suite_low += c.found_low;
  }
  fmt::print("SUITE (first two kinds): {} of {} found ({:.2f} %; target <= 2 %), {} at --min-confidence 0.3\n",
             suite_found, suite_n, 100.0 * suite_found / std::max(1, suite_n), suite_low);
  j["suite"] = {{"copies", suite_n}, {"found", suite_found}, {"found_at_0_3", suite_low}};
  if (!json_path.empty()) std::ofstream(json_path) << j.dump(2) << '\n';
  return 0;
}

}  // namespace epochcast::eval
