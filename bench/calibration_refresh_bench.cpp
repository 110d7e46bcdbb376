// What one keyed run costs the job store's calibration (src/service/store_link.cpp): serve and
// watch record a run and then refresh the per GPU pair calibration, and watch records every
// ended job of a fleet, so the store grows by thousands of runs a day. Side by side in one run,
// on stores of 2,000 and 20,000 measured runs (job keys of one bundled workload on two GPU
// types, times jittered ±2 %): the calibration the link keeps between records (only the new
// run's key recomputed), and the reference, a fresh read of every measured run with their pairs
// and residuals (what each refresh did before 2026-12-04). Both must give the same calibration
// (checked). Prints mean wall and CPU per refresh over 20 records and the load average.
// Usage: calibration_refresh_bench [DIR] (default /tmp).
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "../src/service/store_link.hpp"
#include "epochcast/model/dataset.hpp"
#include "epochcast/model/stacked_model.hpp"
#include "epochcast/store/calibration.hpp"
#include "epochcast/store/job_store.hpp"

using namespace epochcast;

namespace {
constexpr int kRecords = 20;  // refreshes timed per store size
std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}
double cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}
double wall_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "/tmp";
  const GpuCatalog catalog = load_gpu_catalog(EPOCHCAST_SOURCE_DIR "/data/gpus.csv");
  const Dataset ds = load_dataset(EPOCHCAST_SOURCE_DIR "/data/nvidiasmi_devicequery_all.csv", catalog);
  const std::vector<RunPair> bundled = make_pairs(ds);
  const auto model = default_model();
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> jitter(0.98, 1.02);
  const auto report_of = [&](const DatasetRow& r, const std::string& key) {
    PredictReport p;
    p.job_key = key;
    p.source.gpu = r.gpu_id;
    p.source.trace = "bench";
    p.source.measured_epoch_s = r.epoch_s * jitter(rng);
    p.source.epoch_time_from = "detected";
    p.source.detected.found = true;
    p.source.detected.period_s = p.source.measured_epoch_s;
    return p;
  };
  fmt::print("calibration_refresh_bench: load average {} at the start\n", loadavg());
  fmt::print("{:>14} {:>12} {:>12} {:>12} {:>12} {:>9}  {}\n", "measured runs", "kept wall ms", "kept CPU ms",
             "fresh wall ms", "fresh CPU ms", "CPU ratio", "same calibration");
  for (const std::size_t jobs : {std::size_t{1000}, std::size_t{10000}}) {
    const std::string db = fmt::format("{}/epochcast-calibration-refresh-{}.db", dir, jobs);
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
    {
      JobStore store(db, StoreMode::kReadWrite);
      for (std::size_t j = 0; j < jobs; ++j) {
        const RunPair& p = bundled[(j * 7919) % bundled.size()];
        for (std::size_t row : {p.source, p.target}) {
          const PredictReport rep = report_of(ds.rows[row], fmt::format("job-{}", j));
          RunRecord run;
          run.job_key = rep.job_key;
          run.gpu = rep.source.gpu;
          run.catalog_version = "bench";
          run.epoch_s = rep.source.measured_epoch_s;
          run.features = ds.rows[row].features;
          store.record(std::move(run));
        }
      }
    }
    StoreLink link(db, catalog);
    static_cast<void>(link.calibration_for(*model));  // the first call reads the store whole
    double kept_wall = 0, kept_cpu = 0, fresh_wall = 0, fresh_cpu = 0;
    bool same = true;
    for (int i = 0; i < kRecords; ++i) {
      // A new job's runs on its two GPU types (a new measured pair every second record).
      const RunPair& p = bundled[(static_cast<std::size_t>(i / 2) * 104729) % bundled.size()];
      const DatasetRow& row = ds.rows[i % 2 ? p.target : p.source];
      PredictReport rep = report_of(row, fmt::format("new-{}", i / 2));
      link.record(rep, row.features, "bench");
      double w = wall_s(), c = cpu_s();
      const Calibration kept = link.calibration_for(*model);
      kept_wall += wall_s() - w, kept_cpu += cpu_s() - c;
      w = wall_s(), c = cpu_s();
      const JobStore reader(db, StoreMode::kReadOnly);
      const auto runs = reader.measured_job_runs();
      const PairSet set = measured_pairs(runs, model_epoch_predictor(*model, catalog));
      const Calibration fresh = fit_calibration(pair_residuals(set, runs, *model, catalog));
      fresh_wall += wall_s() - w, fresh_cpu += cpu_s() - c;
      same = same && kept.pairs().size() == fresh.pairs().size() && kept.residual_sd() == fresh.residual_sd();
      for (std::size_t k = 0; same && k < kept.pairs().size(); ++k)
        same = kept.pairs()[k].log_bias == fresh.pairs()[k].log_bias && kept.pairs()[k].pairs == fresh.pairs()[k].pairs;
    }
    const double n = kRecords;
    fmt::print("{:>14} {:>12.2f} {:>12.2f} {:>12.2f} {:>12.2f} {:>8.1f}x  {}{}\n", 2 * jobs + kRecords,
               1e3 * kept_wall / n, 1e3 * kept_cpu / n, 1e3 * fresh_wall / n, 1e3 * fresh_cpu / n,
               kept_cpu > 0 ? fresh_cpu / kept_cpu : 0.0, same ? "yes" : "NO",
               link.full_reads() == 1 ? "" : fmt::format(" (the link read the store {} times)", link.full_reads()));
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);
  }
  fmt::print("load average {} at the end; {} cores\n", loadavg(), std::thread::hardware_concurrency());
  std::fflush(stdout);
  std::_Exit(0);  // XGBoost's statics may be gone before ours at exit (as model_bench)
}
