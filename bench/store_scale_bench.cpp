// The store target: 10,000 runs recorded and a refit with 1,000 measured pairs in
// <= 30 s. Runs are the bundled dataset's rows (cycled, epoch times jittered by up to ±2 %);
// 1,000 job keys each get the runs of one workload on two GPU types (a measured pair), the
// other 8,000 runs carry no key. Each run is recorded in its own transaction, as predict does.
// Then: read the runs pairs are made of (and, as the reference, every run), form the pairs
// (reused-key check with the bundled model), fit on the bundled pairs plus the store's (as `fit
// --store`: each store pair once with weight kStorePairWeight). The reference, fitted in the same
// run right after: the same store pairs duplicated kStorePairWeight times (how fit --store added
// them before row weights); the refit's wall and CPU ratios to it are printed. Prints each step's
// wall time, CPU time and the load average.
// Usage: store_scale_bench [DB] (default: a file in /tmp, removed first).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "epochcast/model/dataset.hpp"
#include "epochcast/model/scaling_prior.hpp"
#include "epochcast/model/stacked_model.hpp"
#include "epochcast/store/job_store.hpp"
#include "epochcast/store/pairs.hpp"

using namespace epochcast;

namespace {
constexpr std::size_t kRuns = 10000;
constexpr std::size_t kPairedJobs = 1000;
// As fit --store (kStorePairWeight in src/service/store_link.hpp); STORE_WEIGHT=N to measure another.
const int kStorePairWeight = std::getenv("STORE_WEIGHT") ? std::atoi(std::getenv("STORE_WEIGHT")) : 3;
std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}
double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
// CPU seconds of the whole process (every thread): what a step costs whatever the machine's load;
// its ratio to the wall time is the share of the cores the step got.
double cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string db = argc > 1 ? argv[1] : "/tmp/epochcast-store-scale.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
  const GpuCatalog catalog = load_gpu_catalog(EPOCHCAST_SOURCE_DIR "/data/gpus.csv");
  const Dataset ds = load_dataset(EPOCHCAST_SOURCE_DIR "/data/nvidiasmi_devicequery_all.csv", catalog);
  const std::vector<RunPair> bundled = make_pairs(ds);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> jitter(0.98, 1.02);

  auto run_of = [&](const DatasetRow& r, const std::string& key) {
    RunRecord run;
    run.gpu = r.gpu_id;
    run.job_key = key;
    run.catalog_version = "bench";
    run.trace = "bench";
    run.detected = true;
    run.period_s = r.epoch_s;
    run.epoch_s = r.epoch_s * jitter(rng);
    run.epoch_time_from = "detected";
    run.features = r.features;
    run.predictions.push_back({"h100-sxm", r.epoch_s / 3, r.epoch_s / 4, r.epoch_s / 2, 0});
    return run;
  };
  fmt::print("store_scale_bench: load average {} at the start\n", loadavg());
  // The model the reused-key check predicts with, as fit --store: the default model, from its
  // cache (a miss fits it: run the bench twice after a rebuild). Loading it adopts its scaling
  // prior (adopt_calibrated_scaling_prior), which the refit would otherwise compute.
  auto t0 = std::chrono::steady_clock::now();
  double c0 = cpu_s();
  const auto checker = default_model();
  const double model_s = since(t0), model_cpu = cpu_s() - c0;
  // The scaling prior's calibration on the public table: once per process, by the first fit,
  // unless adopted above (then ~0).
  t0 = std::chrono::steady_clock::now();
  c0 = cpu_s();
  static_cast<void>(calibrated_scaling_prior());
  const double prior_s = since(t0), prior_cpu = cpu_s() - c0;
  t0 = std::chrono::steady_clock::now();
  c0 = cpu_s();
  {
    JobStore store(db, StoreMode::kReadWrite);
    std::size_t recorded = 0;
    for (std::size_t j = 0; j < kPairedJobs; ++j) {
      const RunPair& p = bundled[(j * 7919) % bundled.size()];
      const std::string key = fmt::format("job-{}", j);
      store.record(run_of(ds.rows[p.source], key));
      store.record(run_of(ds.rows[p.target], key));
      recorded += 2;
    }
    for (std::size_t i = 0; recorded < kRuns; ++i, ++recorded) store.record(run_of(ds.rows[i % ds.rows.size()], ""));
  }
  const double record_s = since(t0), record_cpu = cpu_s() - c0;

  t0 = std::chrono::steady_clock::now();
  c0 = cpu_s();
  const JobStore store(db, StoreMode::kReadOnly);
  const std::vector<RunRecord> runs = store.measured_job_runs();
  const double read_s = since(t0), read_cpu = cpu_s() - c0;
  // The reference: every run with its predictions, as the refit read them before measured_job_runs().
  t0 = std::chrono::steady_clock::now();
  const std::size_t all_runs = store.runs().size();
  const double read_all_s = since(t0);

  t0 = std::chrono::steady_clock::now();
  c0 = cpu_s();
  const PairSet set = measured_pairs(runs, [&](const RunRecord& s, const std::string& t) {
    return checker->predict(s.features, s.epoch_s, *catalog.find(s.gpu), *catalog.find(t)).epoch_s;
  });
  // All the store pairs join the refit, though fit --store would leave these (GPU pairs of the
  // bundled data: kHeldGpuPairMinPairs) to the calibration: the bench times a refit of 1,000
  // pairs, the same code and size as for GPU pairs the bundled data lacks.
  Dataset train = ds;
  std::vector<RunPair> pairs = bundled;
  append_store_pairs(runs, set, kStorePairWeight, train, pairs);
  const double pairs_s = since(t0), pairs_cpu = cpu_s() - c0;
  Dataset train_dup = ds;
  std::vector<RunPair> pairs_dup = bundled;
  append_store_pairs(runs, set, kStorePairWeight, train_dup, pairs_dup, PairWeighting::kDuplicate);

  t0 = std::chrono::steady_clock::now();
  c0 = cpu_s();
  const StackedModel model = fit_model_on_pairs(train, pairs, catalog, FitOptions{});
  const double fit_s = since(t0), fit_cpu = cpu_s() - c0;
  t0 = std::chrono::steady_clock::now();
  c0 = cpu_s();
  const StackedModel reference = fit_model_on_pairs(train_dup, pairs_dup, catalog, FitOptions{});
  const double ref_s = since(t0), ref_cpu = cpu_s() - c0;
  // The two fits' predictions on the store's own pairs (in-sample), as a check that they learned alike.
  double max_rel = 0, sum_rel = 0;
  std::size_t compared = 0;
  for (std::size_t i = bundled.size(); i < pairs.size(); ++i) {
    const DatasetRow& s = train.rows[pairs[i].source];
    const GpuSpec& sg = *catalog.find(s.gpu_id);
    const GpuSpec& tg = *catalog.find(train.rows[pairs[i].target].gpu_id);
    const double a = model.predict(s.features, s.epoch_s, sg, tg).epoch_s;
    const double b = reference.predict(s.features, s.epoch_s, sg, tg).epoch_s;
    const double rel = std::abs(a / b - 1);
    max_rel = std::max(max_rel, rel);
    sum_rel += rel;
    ++compared;
  }
  fmt::print("{:<52} {:>8} {:>8} {:>6}\n", "step", "wall s", "CPU s", "cores");
  auto row = [](const std::string& what, double wall, double cpu) {
    fmt::print("{:<52} {:>8.2f} {:>8.2f} {:>6.2f}\n", what, wall, cpu, wall > 0 ? cpu / wall : 0.0);
  };
  row(fmt::format("record {} runs (one transaction each)", store.run_count()), record_s, record_cpu);
  row(fmt::format("read the {} runs with a job key and a time", runs.size()), read_s, read_cpu);
  fmt::print("  (reference: every run, {}, with predictions: {:.2f} s wall)\n", all_runs, read_all_s);
  row(fmt::format("form {} pairs ({} refused)", set.pairs.size() / 2, set.refused.size()), pairs_s, pairs_cpu);
  row("load the checker model (the default, cached)", model_s, model_cpu);
  row("calibrate the scaling prior (once per process)", prior_s, prior_cpu);
  row(fmt::format("refit on {} pairs ({} bundled + {} store, weight {})", model.training_pairs(), bundled.size(),
                  set.pairs.size(), kStorePairWeight),
      fit_s, fit_cpu);
  row(fmt::format("reference: {} pairs ({} store duplicated x{})", reference.training_pairs(), set.pairs.size(),
                  kStorePairWeight),
      ref_s, ref_cpu);
  fmt::print("  refit / reference: wall {:.3f}x, CPU {:.3f}x; predictions on the {} store pairs differ by {:.2f} % "
             "on average, {:.2f} % at most\n",
             ref_s > 0 ? fit_s / ref_s : 0.0, ref_cpu > 0 ? fit_cpu / ref_cpu : 0.0, compared,
             compared ? 100 * sum_rel / static_cast<double>(compared) : 0.0, 100 * max_rel);
  const double wall = record_s + read_s + model_s + pairs_s + prior_s + fit_s;
  const double cpu = record_cpu + read_cpu + model_cpu + pairs_cpu + prior_cpu + fit_cpu;
  row("all of the above but the reference (target <= 30 s)", wall, cpu);
  fmt::print("  (with the reference refit instead: {:.2f} s wall, {:.2f} s CPU)\n", wall - fit_s + ref_s,
             cpu - fit_cpu + ref_cpu);
  fmt::print("load average {} at the end; {} cores\n", loadavg(), std::thread::hardware_concurrency());
  std::fflush(stdout);
  std::_Exit(0);  // XGBoost's statics may be gone before ours at exit (as model_bench)
}
