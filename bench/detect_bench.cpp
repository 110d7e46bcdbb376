// Epoch detection: speed (Google Benchmark) and accuracy (--eval) in one program.
//
//   detect_bench                       speed: 24 h at 10 Hz, 6 channels (864,000 samples each)
//   detect_bench --eval [--seeds N] [--only TEXT]   accuracy table: real traces vs truth.json,
//                                      synthetic slices (--only: those whose name contains TEXT,
//                                      no real traces), ours vs the published detector, calibration
//   detect_bench --eval --long [--seeds N] [--only NAME] [--verbose]   the same for long traces
//                                      (17k-870k samples), ours only; --verbose: each miss
//   detect_bench --write-trace FILE    the 24 h trace as canonical CSV (for detect_compare.py)
//   detect_bench --time-file FILE [--repeat N]   time detect_epochs on a file, print JSON
//   detect_bench --null [--verbose]    launch-bound physical null twin vs signature twin, epochs
//                                      4/5/6/8/12 x seeds 0-99: false finds, wrong finds (verbose:
//                                      every find with its reason)
//   detect_bench --eval-real [--seeds N] [--count N] [--verbose] [--json FILE]   issue 23: real traces and variants, varied
//                                      synthetic runs and nulls; ours, published, plain ACF; the
//                                      confident-wrong count first (bench/detect_eval_real.hpp), then
//                                      the leave-one-trace-out fold of kRegionTypicalAlpha (--count N
//                                      null copies per kind and trace, default 20; bench/detect_loto.hpp)
//   detect_bench --null-real [--count N] [--verbose] [--json FILE]   the null suite: line-free
//                                      phase copies and block-bootstrap copies of every shared
//                                      trace's training region, with diagnostics (bench/detect_null_real.hpp)
//   detect_bench --eval-long [--seeds N] [--seed-offset K] [--verbose] [--json FILE] [--write DIR]   semi-real long runs: each
//                                      shared trace's real epochs chained (10-100), whole-run and
//                                      --follow detection (bench/detect_eval_long.hpp); --write DIR:
//                                      each chain not found within 2 %, each wrong live answer's
//                                      prefix and each follow miss's first 5 epochs, with an index
//   detect_bench --power [--seeds N] [--json FILE] [--verbose]   found / right by epochs in view (4-10) and
//                                      length variation (0-15 %) on a clean dip-only signature: what
//                                      spacing alone can decide (bench/detect_power.hpp)
//   detect_bench --reliability [--seeds N] [--json FILE]   how often each confidence level is
//                                      right within 5 %: synthetic, real variants, few-epoch
//                                      subtle runs (bench/detect_reliability.hpp)
//   detect_bench --variants [--seeds N] [--only TEXT] [--json FILE] [--verbose] [--write DIR]   the six real
//                                      traces as another run or collector would give them
//                                      (decimated, averaged, cropped, fewer channels, jittered,
//                                      rows dropped, clock steps, dcgmi / canonical copies),
//                                      scored against truth.json (tests/unit/epoch/variants.hpp);
//                                      random variants over seeds 1..N (default 3); --write: each
//                                      variant as canonical CSV into DIR (for `epochcast detect`)
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "eval/truth.hpp"
#include "eval/variants.hpp"
#include "epochcast/epoch/detect.hpp"
#include "eval/published.hpp"
#include "eval/synthetic.hpp"
#include "epochcast/trace/read.hpp"
#include "detect_eval_long.hpp"
#include "detect_eval_real.hpp"
#include "detect_loto.hpp"
#include "detect_null_real.hpp"
#include "detect_power.hpp"
#include "detect_reliability.hpp"

namespace epochcast {
namespace {

// 24 hours at 10 Hz, 10-minute epochs, the six synthetic channels.
SyntheticSpec day_spec() {
  SyntheticSpec s;
  s.interval_s = 0.1;
  s.period_s = 600;
  s.epochs = 145;  // a little over 24 h; cut to exactly 864,000 samples
  s.event_duty = 0.03;
  s.idle_head_s = 60;
  s.warmup_s = 60;
  s.idle_tail_s = 60;
  s.iteration_s = 0.7;
  return s;
}

const Trace& day_trace() {
  static const Trace trace = [] {
    auto t = make_synthetic_trace(day_spec(), 1).trace;
    if (t.size() < 864000) throw std::runtime_error("day trace shorter than 864,000 samples");
    t.time_s.resize(864000);
    for (auto& c : t.channels) c.values.resize(864000);
    return t;
  }();
  return trace;
}

void BM_Detect24h10Hz6Channels(benchmark::State& state) {
  const Trace& trace = day_trace();
  const auto check = detect_epochs(trace);
  if (!check.found || std::abs(check.period_s - 600) > 6) {
    state.SkipWithError(("24 h trace not detected: " + check.reason).c_str());
    return;
  }
  state.counters["period_s"] = check.period_s;
  for (auto _ : state) {
    auto seg = detect_epochs(trace);
    benchmark::DoNotOptimize(seg);
  }
  state.counters["samples_per_s"] = benchmark::Counter(
      static_cast<double>(trace.size() * trace.channels.size()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Detect24h10Hz6Channels)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_DetectRealTrace(benchmark::State& state) {
  const std::string dir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";
  const Trace trace = read_trace(dir + "vgg16_224_bs32_fp32.smi.csv");
  for (auto _ : state) benchmark::DoNotOptimize(detect_epochs(trace));
}
BENCHMARK(BM_DetectRealTrace)->Unit(benchmark::kMicrosecond);

void BM_PublishedRealTrace(benchmark::State& state) {
  const std::string dir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";
  const Trace trace = read_trace(dir + "vgg16_224_bs32_fp32.smi.csv");
  for (auto _ : state) benchmark::DoNotOptimize(detect_epochs_published(trace));
}
BENCHMARK(BM_PublishedRealTrace)->Unit(benchmark::kMicrosecond);

// ---- accuracy evaluation ----

struct Slice {
  std::string name;
  SyntheticSpec spec;
};

std::vector<Slice> slices() {
  std::vector<Slice> out;
  SyntheticSpec base;  // 0.1 s sampling, 5 s epochs (50 samples), 8 epochs, 6 % validation dip of 30 %
  base.epochs = 8;
  out.push_back({"base", base});
  auto add = [&](const std::string& name, auto tweak) {
    SyntheticSpec s = base;
    tweak(s);
    out.push_back({name, s});
  };
  add("deep dip (80 %, 10 %)", [](SyntheticSpec& s) { s.event_depth = 0.8; s.event_duty = 0.10; });
  add("subtle dip (8 %)", [](SyntheticSpec& s) { s.event_depth = 0.08; });
  add("noisy (6 %)", [](SyntheticSpec& s) { s.noise = 0.06; });
  add("spikes (1 %/sample)", [](SyntheticSpec& s) { s.spike_rate = 0.01; });
  add("drift (30 %)", [](SyntheticSpec& s) { s.drift = 0.3; });
  add("long warm-up (30 s)", [](SyntheticSpec& s) { s.warmup_s = 30; });
  add("missing 10 %", [](SyntheticSpec& s) { s.missing_fraction = 0.10; s.missing_run = 3; });
  add("sampling jitter 30 %", [](SyntheticSpec& s) { s.time_jitter = 0.3; });
  add("epoch jitter 4 %", [](SyntheticSpec& s) { s.period_jitter = 0.04; });
  add("CPU loader (start-up dip)", [](SyntheticSpec& s) { s.event_at_start = true; s.event_depth = 0.5; });
  add("1 s sampling, 60 s epochs", [](SyntheticSpec& s) { s.interval_s = 1; s.period_s = 60; s.event_duty = 0.05; s.idle_head_s = 30; s.idle_tail_s = 20; });
  add("8 samples/epoch (0.5 s, 4 s)", [](SyntheticSpec& s) { s.interval_s = 0.5; s.period_s = 4; s.event_duty = 0.15; });
  add("2,000 samples/epoch", [](SyntheticSpec& s) { s.period_s = 200; s.epochs = 5; s.event_duty = 0.03; });
  add("3 epochs", [](SyntheticSpec& s) { s.epochs = 3; });
  add("no signature", [](SyntheticSpec& s) { s.event_depth = 0; });
  // Few samples and few epochs (like a 500 ms log of a short run): the ACF has too few lags,
  // the boundary-event proposer has to carry it; and the same without a signature.
  add("10 samples/epoch, 4 epochs (0.5 s)", [](SyntheticSpec& s) { s.interval_s = 0.5; s.period_s = 5.25; s.epochs = 4; });
  add("no signature, 4 epochs at 0.5 s", [](SyntheticSpec& s) { s.interval_s = 0.5; s.period_s = 5.25; s.epochs = 4; s.event_depth = 0; });
  // Launch-bound at low utilization (the lenet5 situation): 14 % busy, 5 epochs of 3.7 s with
  // 5 % jitter, the validation pass a 0.19 s rise of +35 % (a few util points), 1 % noise, an
  // idle set-up (no warm-up bursts); then the same with mid-epoch bumps of that very shape
  // (one per 4 s on average).
  auto launch_bound = [](SyntheticSpec& s) {
    s.busy_util_pct = 14; s.event_depth = -0.35; s.event_duty = 0.05; s.period_s = 3.7; s.epochs = 5;
    s.period_jitter = 0.05; s.noise = 0.01; s.warmup_s = 0;
  };
  add("launch-bound, +35 % rise at 14 %", launch_bound);
  add("launch-bound + same-size bumps", [&](SyntheticSpec& s) { launch_bound(s); s.bump_rate_per_s = 0.25; });
  // The same situation modelled physically: utilisation refreshed every 0.2 s (readings repeat
  // in pairs), validation a 0.18 s rise of ~5.6 reading steps on 14 %, 1-point noise, power
  // 0.4 W per util point (idle 120 W, busy +5.6 W; a lagged ~0.6 W step at validation, 0.1 W
  // noise, 0.3 W slow wander), memory utilisation
  // flat, mid-epoch bumps of the same shape one per 4 s; and its null twin (the bumps, no
  // boundary signature), which must abstain.
  auto physical = [](SyntheticSpec& s) {
    s.busy_util_pct = 14; s.event_depth = -0.4; s.event_duty = 0.05; s.period_s = 3.6; s.epochs = 5;
    s.period_jitter = 0.05; s.noise = 0.01; s.warmup_s = 0; s.idle_head_s = 4; s.idle_tail_s = 3;
    s.util_refresh_s = 0.2; s.power_w_per_util = 0.4; s.power_noise_w = 0.1; s.power_wander_w = 0.3;
    s.mem_util_scale = 0; s.iteration_amp = 0; s.bump_rate_per_s = 0.25;
  };
  add("launch-bound physical + bumps", physical);
  add("launch-bound physical, null twin", [&](SyntheticSpec& s) { physical(s); s.boundary_signature = false; });
  // Prometheus read-backs (scrape aliasing): regular timestamps, but each value is the last
  // jittered scrape before its grid point, so values repeat or are skipped. 1x: the 0.1 s series
  // scraped every 0.1 s (sd 10 ms); 2x: the base run replayed twice as fast (0.05 s series,
  // 2.5 s epochs) scraped every 0.1 s (sd 20 ms), so the 0.15 s validation dip is 1-2 read-back
  // samples; that with 4 epochs; and with a weak (8 %) dip and 0.4 s of busy lead-in before the
  // first epoch (first iterations, autotuning), so the busy region's start is no boundary.
  add("scrape aliasing 1x (sd 10 ms)", [](SyntheticSpec& s) { s.scrape_s = 0.1; s.scrape_jitter_s = 0.01; });
  auto twice = [](SyntheticSpec& s) {
    s.interval_s = 0.05; s.period_s = 2.5; s.scrape_s = 0.1; s.scrape_jitter_s = 0.02;
  };
  add("scrape aliasing 2x (sd 20 ms)", twice);
  add("scrape aliasing 2x, 4 epochs", [&](SyntheticSpec& s) { twice(s); s.epochs = 4; });
  add("scrape 2x, 4 ep, 8 % dip, lead-in", [&](SyntheticSpec& s) {
    twice(s); s.epochs = 4; s.event_depth = 0.08; s.lead_in_s = 0.4; s.warmup_s = 0;
  });
  return out;
}

// Long traces (--eval --long): what the block subsample, the ACF window and the flicker
// check's cut-offs touch (every slice above is shorter than 16,384 samples and reads none of
// them). Scored like the slices above; the published detector is left out (too slow here).
std::vector<Slice> long_slices() {
  std::vector<Slice> out;
  out.push_back({"24 h, 10 min epochs (870k)", day_spec()});
  auto add = [&](const std::string& name, auto tweak) {
    SyntheticSpec s;
    tweak(s);
    out.push_back({name, s});
  };
  add("200 x 10 s, validation 15 % (20k)", [](SyntheticSpec& s) { s.period_s = 10; s.epochs = 200; s.event_duty = 0.15; });
  add("700 x 5 s, 1 % jitter (35k)", [](SyntheticSpec& s) { s.epochs = 700; s.period_jitter = 0.01; });
  add("3,600 x 4 s, 1 % jitter (144k)", [](SyntheticSpec& s) { s.period_s = 4; s.epochs = 3600; s.event_duty = 0.1; });
  add("8 h at 1 Hz, 5 min epochs (29k)", [](SyntheticSpec& s) {
    s.interval_s = 1; s.period_s = 300; s.epochs = 96; s.event_duty = 0.03; s.idle_head_s = 60; s.idle_tail_s = 60; });
  add("1,000 x 20 s, noisy 6 % (200k)", [](SyntheticSpec& s) { s.period_s = 20; s.epochs = 1000; s.noise = 0.06; });
  add("330 x 5 s, drift, spikes (17k)", [](SyntheticSpec& s) { s.epochs = 330; s.drift = 0.3; s.spike_rate = 0.01; });
  add("21,000 x 4 s, 1 % jitter (840k)", [](SyntheticSpec& s) { s.period_s = 4; s.epochs = 21000; s.event_duty = 0.1; });
  add("330 x 5 s, no signature (17k)", [](SyntheticSpec& s) { s.epochs = 330; s.event_depth = 0; });
  return out;
}

struct Outcome {
  bool found = false;
  bool has_signature = true;
  double confidence = 0;
  double period_err = 1;     // relative, of the reported (or candidate) period
  double candidate_err = 1;
  double boundary_err_s = 1e9;
  double period_s = 0;
};

Outcome score(const Segmentation& seg, double truth_period, const std::vector<EpochSpan>& truth_epochs,
              bool has_signature) {
  Outcome o;
  o.found = seg.found;
  o.has_signature = has_signature;
  o.confidence = seg.confidence;
  o.period_s = truth_period;
  if (seg.found) o.period_err = std::abs(seg.period_s - truth_period) / truth_period;
  const double cand = seg.found ? seg.period_s : seg.candidate_period_s;
  if (cand > 0) o.candidate_err = std::abs(cand - truth_period) / truth_period;
  if (seg.found) o.boundary_err_s = testing::median_boundary_error_s(truth_epochs, seg.epochs);
  return o;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Row {
  std::string name;
  std::size_t runs = 0, found = 0;
  double median_err = NAN, mean_err = NAN, worst_err = NAN, boundary_s = NAN, boundary_pct = NAN;
  double precision = NAN;          // found and within 3 %
  double abstention_precision = NAN;  // abstained where there was no signature or the guess was wrong
};

Row summarize(const std::string& name, const std::vector<Outcome>& outs) {
  Row r;
  r.name = name;
  r.runs = outs.size();
  std::vector<double> errs, bs, bp;
  std::size_t right = 0, abstained = 0, justified = 0;
  for (const auto& o : outs) {
    if (o.found) {
      ++r.found;
      if (o.has_signature) {
        errs.push_back(o.period_err);
        bs.push_back(o.boundary_err_s);
        bp.push_back(o.boundary_err_s / o.period_s);
      }
      if (o.has_signature && o.period_err <= 0.03) ++right;
    } else {
      ++abstained;
      if (!o.has_signature || o.candidate_err > 0.03) ++justified;
    }
  }
  if (!errs.empty()) {
    r.median_err = median_of(errs);
    double s = 0;
    for (double e : errs) s += e;
    r.mean_err = s / static_cast<double>(errs.size());
    r.worst_err = *std::max_element(errs.begin(), errs.end());
    r.boundary_s = median_of(bs);
    r.boundary_pct = median_of(bp);
  }
  if (r.found) r.precision = static_cast<double>(right) / static_cast<double>(r.found);
  if (abstained) r.abstention_precision = static_cast<double>(justified) / static_cast<double>(abstained);
  return r;
}

std::string pct(double v) { return std::isfinite(v) ? fmt::format("{:.2f}", 100 * v) : "-"; }
std::string sec(double v) { return std::isfinite(v) ? fmt::format("{:.2f}", v) : "-"; }

void print_header() {
  fmt::print("{:<32} {:<9} {:>5} {:>6} {:>8} {:>8} {:>8} {:>7} {:>7} {:>7} {:>7}\n", "slice", "detector", "runs",
             "found", "med err%", "mean%", "worst%", "bnd s", "bnd %P", "prec%", "abst%");
}
void print_row(const Row& r, const char* who) {
  fmt::print("{:<32} {:<9} {:>5} {:>6} {:>8} {:>8} {:>8} {:>7} {:>7} {:>7} {:>7}\n", r.name, who, r.runs, r.found,
             pct(r.median_err), pct(r.mean_err), pct(r.worst_err), sec(r.boundary_s), pct(r.boundary_pct),
             pct(r.precision), pct(r.abstention_precision));
}

nlohmann::json row_json(const Row& r) {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"slice", r.name}, {"runs", r.runs}, {"found", r.found}, {"median_period_err", num(r.median_err)},
          {"mean_period_err", num(r.mean_err)}, {"worst_period_err", num(r.worst_err)},
          {"median_boundary_err_s", num(r.boundary_s)}, {"median_boundary_err_of_period", num(r.boundary_pct)},
          {"precision", num(r.precision)}, {"abstention_precision", num(r.abstention_precision)}};
}

// `only`: slices whose name contains it; `verbose`: each run found more than 3 % off, or
// abstaining on a signature, with its reason.
int run_eval_long(int seeds, const std::string& only, bool verbose) {
  print_header();
  std::vector<Outcome> all;
  for (const auto& slice : long_slices()) {
    if (slice.name.find(only) == std::string::npos) continue;
    std::vector<Outcome> ours;
    for (int seed = 0; seed < seeds; ++seed) {
      const auto synth = make_synthetic_trace(slice.spec, static_cast<std::uint64_t>(seed) * 7919 + 17);
      const auto seg = detect_epochs(synth.trace);
      ours.push_back(score(seg, synth.truth.period_s, synth.truth.epochs, synth.truth.has_signature));
      if (verbose && synth.truth.has_signature && (!seg.found || ours.back().period_err > 0.03))
        fmt::print("  {} seed {}: found {} period {:.4g} s (truth {:.4g} s) | {}\n", slice.name, seed, seg.found,
                   seg.found ? seg.period_s : seg.candidate_period_s, synth.truth.period_s, seg.reason);
    }
    print_row(summarize(slice.name, ours), "epochcast");
    all.insert(all.end(), ours.begin(), ours.end());
  }
  print_row(summarize("ALL long", all), "epochcast");
  return 0;
}

int run_eval(int seeds, const std::string& json_path, const std::string& only) {
  nlohmann::json report;
  print_header();
  // (a) real traces.
  const std::string dir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";
  const char* names[] = {"effnetb0_224_bs64_ckpt_500ms", "lenet5_28_bs64_fp32", "mobilenetv2_224_bs128_noval",
                         "resnet18_32_bs128_cpuloader", "resnet50_224_bs256_bf16", "vgg16_224_bs32_fp32"};
  std::vector<Outcome> ours_real, pub_real;
  for (const char* name : names) {
    if (!only.empty()) break;  // --only: the named synthetic slices alone
    ReadOptions options;
    options.host_path = dir + name + ".host.csv";
    const Trace trace = read_trace(dir + name + ".smi.csv", options);
    const auto truth = testing::load_truth(dir + name + ".truth.json", trace.first_timestamp);
    const auto o = score(detect_epochs(trace), truth.period_s, truth.epochs, truth.validation);
    const auto p = score(detect_epochs_published(trace), truth.period_s, truth.epochs, truth.validation);
    ours_real.push_back(o);
    pub_real.push_back(p);
    const auto ro = summarize(std::string("real: ") + name, {o});
    const auto rp = summarize(std::string("real: ") + name, {p});
    print_row(ro, "epochcast");
    print_row(rp, "published");
    report["real"].push_back({{"trace", name}, {"epochcast", row_json(ro)}, {"published", row_json(rp)}});
  }
  // (b) synthetic slices.
  std::vector<Outcome> all_ours, all_pub;
  std::vector<std::pair<double, Outcome>> calibration;
  for (const auto& slice : slices()) {
    if (!only.empty() && slice.name.find(only) == std::string::npos) continue;
    std::vector<Outcome> ours, pub;
    for (int seed = 0; seed < seeds; ++seed) {
      const auto synth = make_synthetic_trace(slice.spec, static_cast<std::uint64_t>(seed) * 7919 + 17);
      DetectOptions all;
      all.min_confidence = 0;  // score the confidence itself below
      const auto seg = detect_epochs(synth.trace, all);
      auto o = score(seg, synth.truth.period_s, synth.truth.epochs, synth.truth.has_signature);
      calibration.emplace_back(seg.confidence, o);
      // Found: what the default options report (the calibration run above, at threshold 0,
      // accepts the autocorrelation's answer whenever it is the most confident one).
      o = score(detect_epochs(synth.trace), synth.truth.period_s, synth.truth.epochs, synth.truth.has_signature);
      ours.push_back(o);
      pub.push_back(score(detect_epochs_published(synth.trace), synth.truth.period_s, synth.truth.epochs,
                          synth.truth.has_signature));
    }
    const auto ro = summarize(slice.name, ours);
    const auto rp = summarize(slice.name, pub);
    print_row(ro, "epochcast");
    print_row(rp, "published");
    report["synthetic"].push_back({{"slice", slice.name}, {"epochcast", row_json(ro)}, {"published", row_json(rp)}});
    all_ours.insert(all_ours.end(), ours.begin(), ours.end());
    all_pub.insert(all_pub.end(), pub.begin(), pub.end());
  }
  const auto to = summarize("ALL synthetic", all_ours);
  const auto tp = summarize("ALL synthetic", all_pub);
  print_row(to, "epochcast");
  print_row(tp, "published");
  report["synthetic_all"] = {{"epochcast", row_json(to)}, {"published", row_json(tp)}};
  // (c) confidence calibration: precision (period within 3 %) and coverage by threshold.
  fmt::print("\nconfidence threshold -> precision of 'found' (period within 3 %), coverage of traces with a signature, "
             "false finds on no-signature traces\n");
  std::size_t with_sig = 0, without = 0;
  for (const auto& [c, o] : calibration) (o.has_signature ? with_sig : without)++;
  for (double th : {0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8}) {
    std::size_t found = 0, right = 0, covered = 0, false_finds = 0;
    for (const auto& [c, o] : calibration) {
      if (c < th || o.candidate_err >= 1) continue;
      ++found;
      if (o.has_signature && o.candidate_err <= 0.03) ++right, ++covered;
      if (!o.has_signature) ++false_finds;
    }
    fmt::print("  >= {:.1f}: precision {:6.2f} %  coverage {:6.2f} %  false finds {}/{}\n", th,
               found ? 100.0 * static_cast<double>(right) / static_cast<double>(found) : 0.0,
               with_sig ? 100.0 * static_cast<double>(covered) / static_cast<double>(with_sig) : 0.0, false_finds, without);
    report["calibration"].push_back({{"threshold", th}, {"found", found}, {"right", right}, {"false_finds", false_finds}});
  }
  if (!json_path.empty()) std::ofstream(json_path) << report.dump(2) << "\n";
  return 0;
}

int write_trace(const std::string& path) {
  std::ofstream out(path);
  if (!out) {
    std::cerr << "cannot write " << path << "\n";
    return 1;
  }
  write_canonical_csv(day_trace(), out);
  return out ? 0 : 1;
}

int time_file(const std::string& path, int repeat) {
  const Trace trace = read_trace(path);
  // Wall and process CPU time: the build machine is shared, CPU time is the one-core figure.
  std::vector<double> ms, cpu_ms;
  Segmentation seg;
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    seg = detect_epochs(trace);
    cpu_ms.push_back(1000.0 * static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  std::sort(cpu_ms.begin(), cpu_ms.end());
  nlohmann::json j{{"samples", trace.size()}, {"channels", trace.channels.size()}, {"best_ms", ms.front()},
                   {"median_ms", ms[ms.size() / 2]}, {"best_cpu_ms", cpu_ms.front()},
                   {"median_cpu_ms", cpu_ms[cpu_ms.size() / 2]}, {"period_s", seg.found ? seg.period_s : 0.0},
                   {"confidence", seg.confidence}};
  std::cout << j.dump() << "\n";
  return 0;
}

// The physical launch-bound spec of tests/unit/epoch/launch_bound_test.cpp with and without
// its boundary signature: how often the null twin is "found", how often the signature is found
// wrongly (> 3 % off), and at what confidence.
int run_null(bool verbose) {
  auto physical = [](int epochs) {
    SyntheticSpec s;
    s.busy_util_pct = 14; s.event_depth = -0.4; s.event_duty = 0.05; s.period_s = 3.6; s.epochs = epochs;
    s.period_jitter = 0.05; s.noise = 0.01; s.warmup_s = 0; s.idle_head_s = 4; s.idle_tail_s = 3;
    s.util_refresh_s = 0.2; s.power_w_per_util = 0.4; s.power_noise_w = 0.1; s.power_wander_w = 0.3;
    s.mem_util_scale = 0; s.iteration_amp = 0; s.bump_rate_per_s = 0.25;
    return s;
  };
  int runs = 0, null_found = 0, sig_found = 0, sig_wrong = 0;
  double null_max_conf = 0;
  for (int epochs : {4, 5, 6, 8, 12})
    for (unsigned long long seed = 0; seed < 100; ++seed)
      for (bool sig : {false, true}) {
        auto spec = physical(epochs);
        spec.boundary_signature = sig;
        const auto s = make_synthetic_trace(spec, seed * 7919 + 17);
        const auto seg = detect_epochs(s.trace);
        if (!sig) {
          ++runs;
          if (!seg.found) continue;
          ++null_found;
          null_max_conf = std::max(null_max_conf, seg.confidence);
          if (verbose) fmt::print("NULL e{} s{} conf {:.2f} | {}\n", epochs, seed, seg.confidence, seg.reason);
        } else if (seg.found) {
          ++sig_found;
          const double err = std::abs(seg.period_s - s.truth.period_s) / s.truth.period_s;
          if (err > 0.03) ++sig_wrong;
          if (verbose)
            fmt::print("{} e{} s{} err {:.1f}% conf {:.2f} | {}\n", err > 0.03 ? "WRONG" : "RIGHT", epochs, seed,
                       100 * err, seg.confidence, seg.reason);
        }
      }
  fmt::print("null runs {}: found {} (max confidence {:.2f}); signature runs {}: found {}, wrong {}\n", runs,
             null_found, null_max_conf, runs, sig_found, sig_wrong);
  return 0;
}


// Real-trace variants (docs/detection.md "Real-trace variants"): one row per variant (and seed
// for the random ones), one cell per trace: R right (found, period within 3 % of truth.json's
// mean epoch), W wrong (found, more than 3 % off: the failure that matters), a abstained; a
// trailing '*' marks a view below the floor (< 8 samples per epoch or < 3 epochs in view),
// where abstaining is right too; ERR an exception. "lost": abstained above the floor where the
// original is found.
int run_variants(int seeds, const std::string& json_path, const std::string& only, bool verbose,
                 const std::string& write_dir) {
  const std::string dir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";
  std::vector<testing::RealBase> bases;
  for (const char* name : testing::kRealTraceNames) bases.push_back(testing::load_real_base(dir, name));
  auto short_name = [](const std::string& n) { return n.substr(0, n.find('_')); };
  fmt::print("{:<44}", "variant");
  for (const auto& b : bases) fmt::print(" {:<14}", short_name(b.name));
  fmt::print(" {:>5} {:>5} {:>5} {:>5} {:>5}\n", "right", "WRONG", "abst", "lost", "err");
  nlohmann::json report = nlohmann::json::array();
  std::vector<bool> original_right(bases.size(), false);
  std::size_t all_right = 0, all_wrong = 0, all_abstain = 0, all_lost = 0, all_err = 0, all_floor_wrong = 0;
  for (const auto& spec : testing::real_variants()) {
    const std::string label = spec.group + ": " + spec.name;
    if (label.find(only) == std::string::npos && spec.group != "original") continue;
    for (int seed = 1; seed <= (spec.random ? seeds : 1); ++seed) {
      const std::string row = spec.random ? fmt::format("{} (seed {})", label, seed) : label;
      fmt::print("{:<44}", row);
      std::size_t right = 0, wrong = 0, abstain = 0, lost = 0, errors = 0;
      std::vector<std::string> details;
      for (std::size_t t = 0; t < bases.size(); ++t) {
        const auto& base = bases[t];
        testing::VariantOutcome o;
        std::string cell;
        try {
          const auto v = spec.build(base, static_cast<std::uint64_t>(seed), dir + base.name + ".host.csv");
          const auto seg = detect_epochs(v.trace);
          o = testing::score_variant(base, v, seg);
          if (!write_dir.empty()) {  // as canonical CSV, for `epochcast detect` and scripts
            std::string file = row + "." + short_name(base.name) + ".csv";
            for (char& ch : file)
              if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.') ch = '_';
            std::ofstream out(write_dir + "/" + file);
            write_canonical_csv(v.trace, out);
          }
        } catch (const std::exception& e) {
          o.error = e.what();
        }
        const char* verdict = !o.error.empty() ? "error" : o.right() ? "right" : o.wrong() ? "WRONG" : "abstain";
        if (!o.error.empty()) {
          cell = "ERR";
          ++errors;
        } else if (o.right()) {
          cell = fmt::format("R {:.1f}% {:.2f}", 100 * o.period_err, o.confidence);
          ++right;
          if (spec.group == "original") original_right[t] = true;
        } else if (o.wrong()) {
          cell = fmt::format("W {:.0f}% {:.2f}", 100 * o.period_err, o.confidence);
          ++wrong;
          if (o.below_floor) ++all_floor_wrong;
        } else {
          cell = fmt::format("a {:.2f}", o.confidence);
          ++abstain;
          if (!o.below_floor && original_right[t]) {
            ++lost;
            cell += " lost";
          }
        }
        if (o.below_floor) cell += "*";
        fmt::print(" {:<14}", cell);
        if (verbose)
          details.push_back(fmt::format(
              "    {:<30} {:<7} period {:.3f} s (candidate {:.3f}; truth {:.3f}) conf {:.2f} bnd {} s, {:.1f} "
              "samples/epoch, {:.2f} epochs in view{} | {}",
              base.name, verdict, o.period_s, o.candidate_s, o.truth_period_s, o.confidence, sec(o.boundary_err_s),
              o.samples_per_epoch, o.epochs_in_view, o.below_floor ? " (below floor)" : "",
              o.error.empty() ? o.reason : o.error));
        auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
        report.push_back({{"group", spec.group}, {"variant", spec.name}, {"seed", spec.random ? seed : 0},
                          {"trace", base.name}, {"verdict", verdict}, {"found", o.found},
                          {"confidence", o.confidence}, {"period_s", num(o.found ? o.period_s : NAN)},
                          {"candidate_period_s", num(o.candidate_s > 0 ? o.candidate_s : NAN)},
                          {"truth_period_s", o.truth_period_s}, {"period_err", num(o.period_err)},
                          {"median_boundary_err_s", num(o.boundary_err_s)},
                          {"samples_per_epoch", o.samples_per_epoch}, {"epochs_in_view", o.epochs_in_view},
                          {"below_floor", o.below_floor}, {"lost", verdict == std::string("abstain") && !o.below_floor && original_right[t]},
                          {"error", o.error}, {"reason", o.reason}});
      }
      fmt::print(" {:>5} {:>5} {:>5} {:>5} {:>5}\n", right, wrong, abstain, lost, errors);
      for (const auto& d : details) fmt::print("{}\n", d);
      all_right += right, all_wrong += wrong, all_abstain += abstain, all_lost += lost, all_err += errors;
    }
  }
  fmt::print("ALL: {} right, {} WRONG ({} of them below the floor), {} abstained ({} lost against the original), "
             "{} errors\n",
             all_right, all_wrong, all_floor_wrong, all_abstain, all_lost, all_err);
  if (!json_path.empty())
    std::ofstream(json_path) << nlohmann::json{{"cells", report},
                                               {"totals",
                                                {{"right", all_right}, {"wrong", all_wrong},
                                                 {"wrong_below_floor", all_floor_wrong}, {"abstain", all_abstain},
                                                 {"lost", all_lost}, {"errors", all_err}}}}
                                      .dump(2)
                             << "\n";
  return all_err ? 1 : 0;
}

}  // namespace
}  // namespace epochcast

int main(int argc, char** argv) {
  int seeds = 20, repeat = 7;
  std::string json_path, only;
  bool verbose = false, seeds_given = false;  // anywhere on the line, for every mode below
  for (int i = 1; i < argc; ++i) {
    verbose = verbose || std::strcmp(argv[i], "--verbose") == 0;
    seeds_given = seeds_given || std::strcmp(argv[i], "--seeds") == 0;
    if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[i + 1];
    if (std::strcmp(argv[i], "--seeds") == 0 && i + 1 < argc) seeds = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) repeat = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) json_path = argv[i + 1];
  }
  try {
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--eval") == 0) {
        for (int j = 1; j < argc; ++j)
          if (std::strcmp(argv[j], "--long") == 0) return epochcast::run_eval_long(seeds, only, verbose);
        return epochcast::run_eval(seeds, json_path, only);
      }
      if (std::strcmp(argv[i], "--variants") == 0) {
        std::string write_dir;
        for (int j = 1; j + 1 < argc; ++j)
          if (std::strcmp(argv[j], "--write") == 0) write_dir = argv[j + 1];
        return epochcast::run_variants(seeds_given ? seeds : 3, json_path, only, verbose, write_dir);
      }
      if (std::strcmp(argv[i], "--eval-real") == 0) {
        const int rc = epochcast::eval::run_eval_real(seeds_given ? seeds : 10, verbose, json_path);
        int null_count = 20;
        for (int j = 1; j + 1 < argc; ++j)
          if (std::strcmp(argv[j], "--count") == 0) null_count = std::max(1, std::atoi(argv[j + 1]));
        return rc ? rc : epochcast::eval::run_eval_loto(null_count, json_path);
      }
      if (std::strcmp(argv[i], "--calibrate") == 0) return epochcast::eval::run_calibrate(seeds);
      if (std::strcmp(argv[i], "--null-real") == 0) {
        int count = 100;
        for (int j = 1; j + 1 < argc; ++j)
          if (std::strcmp(argv[j], "--count") == 0) count = std::max(1, std::atoi(argv[j + 1]));
        return epochcast::eval::run_null_real(count, verbose, json_path);
      }
      if (std::strcmp(argv[i], "--eval-long") == 0) {
        std::string write_dir;
        for (int j = 1; j + 1 < argc; ++j)
          if (std::strcmp(argv[j], "--write") == 0) write_dir = argv[j + 1];
        int seed_offset = 0;  // seeds offset+1 .. offset+N (held-out checks: --seed-offset 3 = seeds 4-6)
        for (int j = 1; j + 1 < argc; ++j)
          if (std::strcmp(argv[j], "--seed-offset") == 0) seed_offset = std::max(0, std::atoi(argv[j + 1]));
        return epochcast::eval::run_eval_long_chained(seeds_given ? seeds : 3, verbose, json_path, write_dir, seed_offset);
      }
      if (std::strcmp(argv[i], "--power") == 0)
        return epochcast::eval::run_power(seeds_given ? seeds : 20, json_path, verbose);
      if (std::strcmp(argv[i], "--reliability") == 0)
        return epochcast::eval::run_reliability(seeds_given ? seeds : 4, json_path);
      if (std::strcmp(argv[i], "--null") == 0)
        return epochcast::run_null(i + 1 < argc && std::strcmp(argv[i + 1], "--verbose") == 0);
      if (std::strcmp(argv[i], "--write-trace") == 0 && i + 1 < argc) return epochcast::write_trace(argv[i + 1]);
      if (std::strcmp(argv[i], "--time-file") == 0 && i + 1 < argc) return epochcast::time_file(argv[i + 1], repeat);
    }
  } catch (const std::exception& e) {
    std::cerr << "detect_bench: " << e.what() << "\n";
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
