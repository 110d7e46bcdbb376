// epochcast jobs list|show|export|import|forget|pairs [--store DB]: the job store (docs/store.md).
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/service/jobs.hpp"
#include "epochcast/service/service.hpp"

namespace epochcast::cli {

namespace {

struct JobsOptions {
  std::string store, job, file, model, catalog;
  std::int64_t id = 0;
  bool json = false;
};

JobsRequest request_of(const JobsOptions& o) { return {o.store, o.job, o.id}; }

std::string fmt_s(double v) { return v > 0 && std::isfinite(v) ? fmt::format("{:.4g}", v) : "-"; }

void list(const JobsOptions& o) {
  const JobsList l = Service().jobs_list(request_of(o));
  if (o.json) {
    std::cout << dump_json(to_json(l), 2) << "\n";
    return;
  }
  fmt::print("{:>5}  {:<20}  {:<16}  {:<10}  {:>10}  {:<8}  {:>5}  {}\n", "id", "recorded (UTC)", "job", "gpu",
             "epoch s", "from", "preds", "trace");
  for (const auto& r : l.runs)
    fmt::print("{:>5}  {:<20}  {:<16}  {:<10}  {:>10}  {:<8}  {:>5}  {}\n", r.id, r.recorded_at,
               r.job_key.empty() ? "-" : r.job_key, r.gpu, fmt_s(r.epoch_s),
               r.epoch_time_from.empty() ? "-" : r.epoch_time_from, r.predictions.size(), r.trace);
  fmt::print("{} run(s) in {} (schema {})\n", l.runs.size(), l.store, l.schema_version);
}

void show(const JobsOptions& o) {
  const RunRecord r = Service().jobs_show(request_of(o));
  if (o.json) {
    std::cout << dump_json(to_json(r), 2) << "\n";
    return;
  }
  fmt::print("run {} ({})\n  recorded  {}\n  job       {}\n  gpu       {} (catalog {})\n  trace     {}\n", r.id, r.uid,
             r.recorded_at, r.job_key.empty() ? "-" : r.job_key, r.gpu, r.catalog_version, r.trace);
  fmt::print("  detection {} (period {} s, confidence {:.2f}, {} epochs){}\n", r.detected ? "found" : "none",
             fmt_s(r.period_s), r.confidence, r.epochs_found, r.detect_reason.empty() ? "" : " — " + r.detect_reason);
  fmt::print("  epoch     {} s ({})\n  model     {}\n", fmt_s(r.epoch_s),
             r.epoch_time_from.empty() ? "unknown" : r.epoch_time_from, r.model_version);
  for (const auto& p : r.predictions)
    fmt::print("  predicted {:<10} {:>10} s  [{} .. {}]{}\n", p.target_gpu, fmt_s(p.epoch_s), fmt_s(p.lo_s),
               fmt_s(p.hi_s),
               p.calibration_log != 0 ? fmt::format("  (store calibration x{:.3f})", std::exp(p.calibration_log)) : "");
}

void export_runs(const JobsOptions& o) {
  const Service service;
  if (o.file.empty() || o.file == "-") {
    service.jobs_export(request_of(o), std::cout);
    return;
  }
  const std::string tmp = o.file + ".tmp";
  std::size_t n = 0;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ErrorCode::kIo, fmt::format("cannot write '{}'", tmp));
    n = service.jobs_export(request_of(o), out);
    out.close();
    if (!out) throw Error(ErrorCode::kIo, fmt::format("cannot write '{}'", tmp));
  }
  if (std::rename(tmp.c_str(), o.file.c_str()) != 0)
    throw Error(ErrorCode::kIo, fmt::format("cannot rename '{}' to '{}'", tmp, o.file));
  std::cerr << fmt::format("epochcast: exported {} run(s) to {}\n", n, o.file);
}

void import_runs(const JobsOptions& o) {
  std::ifstream in(o.file, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, fmt::format("cannot read '{}'", o.file));
  const JobsImport r = Service().jobs_import(request_of(o), in, o.file);
  if (o.json) {
    std::cout << dump_json({{"imported", r.result.imported}, {"skipped_known", r.result.skipped_known}, {"store", r.store}})
              << "\n";
    return;
  }
  fmt::print("imported {} run(s) into {} ({} already there)\n", r.result.imported, r.store, r.result.skipped_known);
}

void forget(const JobsOptions& o) {
  const std::size_t n = Service().jobs_forget(request_of(o));
  if (o.json) {
    std::cout << dump_json({{"forgotten", n}}) << "\n";
    return;
  }
  fmt::print("forgot {} run(s) (with their predictions and feedback)\n", n);
}

// Measured pairs and running error per GPU pair; the calibration against the model in use.
void pairs(const JobsOptions& o) {
  ServiceConfig config;
  config.model_path = o.model;
  config.gpu_catalog_path = o.catalog;
  const JobPairs p = Service(config).jobs_pairs(request_of(o));
  if (o.json) {
    std::cout << dump_json(to_json(p), 2) << "\n";
    return;
  }
  fmt::print("{:<10} {:<10} {:>6} {:>10} {:>12} {:>8} {:>10}\n", "source", "target", "pairs", "mean err",
             "calibration", "checked", "MAPE %");
  for (const auto& g : p.gpu_pairs)
    fmt::print("{:<10} {:<10} {:>6} {:>+9.1f}% {:>11} {:>8} {:>10}\n", g.source_gpu, g.target_gpu, g.pairs,
               g.pairs > 0 ? (std::exp(g.mean_log_residual) - 1) * 100 : 0.0,
               g.pairs > 0 ? fmt::format("x{:.3f}", std::exp(g.calibration_log)) : "-", g.checked_predictions,
               g.prediction_mape_pct ? fmt::format("{:.1f}", *g.prediction_mape_pct) : "-");
  for (const auto& r : p.refused) fmt::print("refused: {}\n", r.reason);
  fmt::print("'mean err': the model's mean error on the store's measured pairs; 'checked': predictions of\n"
             "one GPU's run later measured on the other; MAPE of those as recorded.\n");
}

}  // namespace

void add_jobs_command(CLI::App& app) {
  auto o = std::make_shared<JobsOptions>();
  auto* cmd = app.add_subcommand("jobs", "The job store: runs recorded by predict --job KEY --store DB");
  cmd->require_subcommand(1);
  auto store_opt = [&](CLI::App* c) {
    c->add_option("--store", o->store, "job store (SQLite file; default: $EPOCHCAST_STORE)");
    c->add_flag("--json", o->json, "print JSON");
  };
  store_opt(cmd);
  auto* l = cmd->add_subcommand("list", "List the recorded runs");
  store_opt(l);
  l->add_option("--job", o->job, "only the runs of this job key");
  l->callback([o] { list(*o); });
  auto* s = cmd->add_subcommand("show", "Show one run with its predictions");
  store_opt(s);
  s->add_option("id", o->id, "run id (from jobs list)")->required()->check(CLI::PositiveNumber);
  s->callback([o] { show(*o); });
  auto* e = cmd->add_subcommand("export", "Write every run as JSON lines");
  store_opt(e);
  e->add_option("-o,--output", o->file, "file to write (default: standard output)");
  e->callback([o] { export_runs(*o); });
  auto* i = cmd->add_subcommand("import", "Add the runs of an export (runs already there are skipped)");
  store_opt(i);
  i->add_option("file", o->file, "JSON lines from jobs export")->required();
  i->callback([o] { import_runs(*o); });
  auto* f = cmd->add_subcommand("forget", "Delete a run, or every run of a job key");
  store_opt(f);
  f->add_option("id", o->id, "run id")->check(CLI::PositiveNumber);
  f->add_option("--job", o->job, "every run of this job key");
  f->callback([o] { forget(*o); });
  auto* p = cmd->add_subcommand("pairs", "Measured pairs, calibration and running prediction error per GPU pair");
  store_opt(p);
  p->add_option("--model", o->model, "model the calibration is computed for (default: the bundled one)");
  p->add_option("--catalog", o->catalog, "GPU catalog CSV");
  p->callback([o] { pairs(*o); });
}

}  // namespace epochcast::cli
