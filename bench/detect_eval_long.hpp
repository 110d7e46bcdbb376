// detect_bench --eval-long [--seeds N] [--seed-offset K] [--verbose] [--json FILE] [--write DIR] (issue 23, "Long runs"):
// semi-real long runs, each shared trace's real epochs chained (src/eval/chained.hpp) with its
// real start-up and tail: 10, 30 and 100 epochs x epoch-length variation 2, 5 and 10 % x seeds.
// Whole run: found within 2 % of the chained mean epoch (the target: >= 98 %), within 5 %,
// confidently wrong (>= 0.5 and > 5 % off, or any find on the run without a signature), abstained.
// --follow: the run replayed into the live Detector in 1 s polls (src/eval/follow_replay.hpp);
// "by epoch 5" = the first confident answer (found, >= 0.5) came before the 5th epoch ended
// (the target: >= 90 %), "right" = that first answer within 5 % of the mean of the epochs ended
// by then (what it has seen). --write DIR: every chain with a
// signature not found within 2 % (canonical CSV, for `epochcast detect`) and the --follow prefix
// of every wrong live answer (detecting on it gives that answer), listed in DIR/index.txt.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "epochcast/epoch/detect.hpp"
#include "epochcast/trace/read.hpp"
#include "eval/chained.hpp"
#include "eval/follow_replay.hpp"
#include "eval/variants.hpp"

namespace epochcast::eval {

inline constexpr int kLongEpochs[] = {10, 30, 100};
inline constexpr double kLongCv[] = {0.02, 0.05, 0.10};
inline constexpr double kFollowPollS = 1.0;     // --follow's poll, in trace seconds
inline constexpr int kFollowWithinEpochs = 5;   // the target's "within the first 5 epochs"

struct LongTally {
  int n = 0, within2 = 0, within5 = 0, conf_wrong = 0, abstain = 0;
  int follow_by5 = 0, follow_by5_right = 0, follow_wrong = 0;
  void add(const LongTally& o) {
    n += o.n, within2 += o.within2, within5 += o.within5, conf_wrong += o.conf_wrong, abstain += o.abstain;
    follow_by5 += o.follow_by5, follow_by5_right += o.follow_by5_right, follow_wrong += o.follow_wrong;
  }
  [[nodiscard]] std::string cells() const {
    return fmt::format("{:>5} {:>5} {:>7} {:>7} {:>5}   {:>7} {:>7} {:>7}", conf_wrong, n, within2, within5, abstain,
                       follow_by5, follow_by5_right, follow_wrong);
  }
  [[nodiscard]] nlohmann::json json() const {
    return {{"runs", n},           {"within_2pct", within2},       {"within_5pct", within5},
            {"confident_wrong", conf_wrong}, {"abstained", abstain}, {"follow_confident_by_epoch_5", follow_by5},
            {"follow_first_answer_right_5pct", follow_by5_right}, {"follow_first_answer_wrong", follow_wrong}};
  }
};

// The first `rows` samples of a trace (a --follow prefix), for the reproducer files.
inline Trace prefix_of(const Trace& t, std::size_t rows) {
  Trace p = t;
  p.time_s.resize(std::min(rows, t.size()));
  for (auto& c : p.channels) c.values.resize(p.time_s.size());
  return p;
}

inline void write_csv(const std::string& path, const Trace& t) {
  std::ofstream out(path);
  write_canonical_csv(t, out);
}

inline int run_eval_long_chained(int seeds, bool verbose, const std::string& json_path, const std::string& write_dir = {},
                                 int seed_offset = 0) {
  std::ofstream index;
  if (!write_dir.empty()) index.open(write_dir + "/index.txt");
  const std::string dir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";
  fmt::print("detect_bench --eval-long: each shared trace's real epochs chained, epochs {{10, 30, 100}} x length\n"
             "variation {{2, 5, 10}} % x {} seeds. CWRNG = confidence >= 0.5 and > 5 % off (any find without a\n"
             "signature); follow = replayed in {} s polls: confident by epoch {}, that first answer right within\n"
             "5 % of the epochs seen by then, first answer wrong (> 5 % off or without a signature).\n\n",
             seeds, kFollowPollS, kFollowWithinEpochs);
  const std::string head = fmt::format("{:>5} {:>5} {:>7} {:>7} {:>5}   {:>7} {:>7} {:>7}", "CWRNG", "n", "in 2 %",
                                       "in 5 %", "abst", "fol by5", "fol ok", "fol bad");
  fmt::print("{:<44} {}\n", "trace / epochs", head);
  nlohmann::json j;
  LongTally all_sig, all_sig_but_launch, all_null;
  for (const char* name : testing::kRealTraceNames) {
    const auto base = testing::load_real_base(dir, name);
    const bool sig = base.truth.validation;
    LongTally trace_total;
    for (int epochs : kLongEpochs) {
      LongTally t;
      for (double cv : kLongCv)
        for (int seed = seed_offset + 1; seed <= seed_offset + seeds; ++seed) {
          const auto run = chain_real_epochs(base, {epochs, cv}, 7919ULL * static_cast<std::uint64_t>(seed) + epochs);
          const auto seg = detect_epochs(run.trace);
          const double truth = run.period_s;
          ++t.n;
          const double err = seg.found ? std::abs(seg.period_s - truth) / truth : 1e9;
          if (!seg.found) ++t.abstain;
          else if (!sig) ++t.conf_wrong;
          else {
            t.within2 += err <= 0.02;
            t.within5 += err <= 0.05;
            t.conf_wrong += err > 0.05 && seg.confidence >= 0.5;
          }
          const std::size_t k = std::min<std::size_t>(kFollowWithinEpochs, run.epochs.size()) - 1;
          const auto f = replay_follow(run.trace, run.epochs[k].end_s, kFollowPollS);
          const std::string id = fmt::format("{}.e{}.cv{:.0f}.s{}", name, epochs, 100 * cv, seed);
          // --write: the chain's rows up to `until_s` as ID.SUFFIX.csv; returns their count.
          const auto write_prefix = [&](const char* suffix, double until_s) {
            const auto rows = static_cast<std::size_t>(
                std::upper_bound(run.trace.time_s.begin(), run.trace.time_s.end(), until_s) - run.trace.time_s.begin());
            write_csv(write_dir + "/" + id + "." + suffix + ".csv", prefix_of(run.trace, rows));
            return rows;
          };
          if (f.confident) {
            // A live answer is judged against the epochs it has seen: the mean of those ended
            // by then (with 10 % variation, 3-4 epochs' mean is off the chain's by ~5 %).
            double seen = 0;
            int seen_n = 0;
            for (const auto& ep : run.epochs)
              if (ep.end_s <= f.at_s) seen += ep.end_s - ep.start_s, ++seen_n;
            const double live_truth = seen_n ? seen / seen_n : run.epochs.front().end_s - run.epochs.front().start_s;
            const double ferr = std::abs(f.period_s - live_truth) / live_truth;
            const bool ok = sig && ferr <= 0.05;
            ++t.follow_by5;
            t.follow_by5_right += ok;
            t.follow_wrong += !ok;
            if (!ok && verbose)
              fmt::print("    FOLLOW WRONG {}: {:.3f} s (epochs seen {:.3f}, chain {:.3f}) at {:.2f} after {:.1f} s\n", id,
                         f.period_s, live_truth, truth, f.confidence, f.at_s);
            if (!ok && index.is_open()) {
              const std::size_t rows = write_prefix("follow-prefix", f.at_s);
              index << fmt::format("{}.follow-prefix.csv  live answer {:.3f} s at {:.2f}, epochs seen {:.3f} s, chain {:.3f} s "
                                   "(first {} samples)\n",
                                   id, f.period_s, f.confidence, live_truth, truth, rows);
            }
          }
          if (!f.confident && sig && index.is_open()) {
            // No live answer by the 5th epoch: the prefix the replay ended with, to look at.
            const std::size_t rows = write_prefix("follow-miss", run.epochs[k].end_s);
            index << fmt::format("{}.follow-miss.csv  no live answer by epoch {}, chain {:.3f} s (first {} samples)\n", id,
                                 k + 1, truth, rows);
          }
          if (index.is_open() && sig && !(seg.found && err <= 0.02)) {
            write_csv(write_dir + "/" + id + ".csv", run.trace);
            index << fmt::format("{}.csv  {} {:.3f} s at {:.2f}, truth {:.3f} s\n", id, seg.found ? "found" : "abstains, guess",
                                 seg.found ? seg.period_s : seg.candidate_period_s, seg.confidence, truth);
          }
          if (verbose && ((seg.found && (!sig || err > 0.02)) || (!seg.found && sig)))
            fmt::print("    {} {} ep cv {:.0f} % s{}: {} {:.3f} s (truth {:.3f}) conf {:.2f} | {}\n", name, epochs,
                       100 * cv, seed, seg.found ? "found" : "abst", seg.found ? seg.period_s : seg.candidate_period_s,
                       truth, seg.confidence, (seg.reason.size() > 160 ? seg.reason.substr(0, 80) + " ... " + seg.reason.substr(seg.reason.size() - 120) : seg.reason));
        }
      fmt::print("{:<44} {}\n", fmt::format("{}{} / {}", name, sig ? "" : " (no signature)", epochs), t.cells());
      j["traces"][name][std::to_string(epochs)] = t.json();
      trace_total.add(t);
    }
    (sig ? all_sig : all_null).add(trace_total);
    if (sig && std::string(name).find("lenet5") == std::string::npos) all_sig_but_launch.add(trace_total);
  }
  fmt::print("{:<44} {}\n", "ALL WITH A SIGNATURE", all_sig.cells());
  fmt::print("{:<44} {}\n", "  without the launch-bound lenet5", all_sig_but_launch.cells());
  fmt::print("{:<44} {}\n", "NO SIGNATURE (mobilenetv2)", all_null.cells());
  auto pct = [](int a, int b) { return 100.0 * a / std::max(1, b); };
  fmt::print("\nwith a signature: found within 2 % {:.1f} % (target >= 98 %); --follow confident by epoch {} {:.1f} %"
             " (target >= 90 %), right {:.1f} %\n",
             pct(all_sig.within2, all_sig.n), kFollowWithinEpochs, pct(all_sig.follow_by5, all_sig.n),
             pct(all_sig.follow_by5_right, all_sig.n));
  j["all_with_signature"] = all_sig.json();
  j["all_with_signature_but_lenet5"] = all_sig_but_launch.json();
  j["no_signature"] = all_null.json();
  j["seeds"] = seeds;
  j["seed_offset"] = seed_offset;
  if (!json_path.empty()) std::ofstream(json_path) << j.dump(2) << '\n';
  return 0;
}

}  // namespace epochcast::eval
