// epochcast jobs list|show|export|import|forget|pairs [--store DB]: the job store (docs/store.md).
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include "commands.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/store/calibration.hpp"
#include "epochcast/store/job_store.hpp"
#include "epochcast/store/pairs.hpp"
#include "epochcast/store/run_json.hpp"

namespace epochcast::cli {

namespace {

struct JobsOptions {
  std::string store, job, file, model, catalog;
  std::int64_t id = 0;
  bool json = false;
};

std::string store_path(const JobsOptions& o) {
  if (!o.store.empty()) return o.store;
  std::string p = default_store_path();
  if (p.empty()) throw Error(ErrorCode::kInvalidArgument, "no job store: pass --store DB (or set EPOCHCAST_STORE)");
  return p;
}

std::string fmt_s(double v) { return v > 0 && std::isfinite(v) ? fmt::format("{:.4g}", v) : "-"; }

void list(const JobsOptions& o) {
  const JobStore store(store_path(o), StoreMode::kReadOnly);
  const auto runs = store.runs(o.job.empty() ? std::nullopt : std::optional<std::string>(o.job));
  if (o.json) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& r : runs) {
      nlohmann::json j = run_to_json(r);
      j.erase("features");
      a.push_back(std::move(j));
    }
    std::cout << dump_json({{"store", store.path()}, {"schema_version", store.schema_version()}, {"runs", a}}, 2) << "\n";
    return;
  }
  fmt::print("{:>5}  {:<20}  {:<16}  {:<10}  {:>10}  {:<8}  {:>5}  {}\n", "id", "recorded (UTC)", "job", "gpu",
             "epoch s", "from", "preds", "trace");
  for (const auto& r : runs)
    fmt::print("{:>5}  {:<20}  {:<16}  {:<10}  {:>10}  {:<8}  {:>5}  {}\n", r.id, r.recorded_at,
               r.job_key.empty() ? "-" : r.job_key, r.gpu, fmt_s(r.epoch_s),
               r.epoch_time_from.empty() ? "-" : r.epoch_time_from, r.predictions.size(), r.trace);
  fmt::print("{} run(s) in {} (schema {})\n", runs.size(), store.path(), store.schema_version());
}

void show(const JobsOptions& o) {
  const JobStore store(store_path(o), StoreMode::kReadOnly);
  const auto r = store.run(o.id);
  if (!r) throw Error(ErrorCode::kNotFound, fmt::format("store '{}' has no run {}", store.path(), o.id));
  if (o.json) {
    std::cout << dump_json(run_to_json(*r), 2) << "\n";
    return;
  }
  fmt::print("run {} ({})\n  recorded  {}\n  job       {}\n  gpu       {} (catalog {})\n  trace     {}\n", r->id,
             r->uid, r->recorded_at, r->job_key.empty() ? "-" : r->job_key, r->gpu, r->catalog_version, r->trace);
  fmt::print("  detection {} (period {} s, confidence {:.2f}, {} epochs){}\n", r->detected ? "found" : "none",
             fmt_s(r->period_s), r->confidence, r->epochs_found,
             r->detect_reason.empty() ? "" : " — " + r->detect_reason);
  fmt::print("  epoch     {} s ({})\n  model     {}\n", fmt_s(r->epoch_s),
             r->epoch_time_from.empty() ? "unknown" : r->epoch_time_from, r->model_version);
  for (const auto& p : r->predictions)
    fmt::print("  predicted {:<10} {:>10} s  [{} .. {}]{}\n", p.target_gpu, fmt_s(p.epoch_s), fmt_s(p.lo_s),
               fmt_s(p.hi_s),
               p.calibration_log != 0 ? fmt::format("  (store calibration x{:.3f})", std::exp(p.calibration_log)) : "");
}

void export_runs(const JobsOptions& o) {
  const JobStore store(store_path(o), StoreMode::kReadOnly);
  if (o.file.empty() || o.file == "-") {
    store.export_jsonl(std::cout);
    return;
  }
  const std::string tmp = o.file + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ErrorCode::kIo, fmt::format("cannot write '{}'", tmp));
    store.export_jsonl(out);
    out.close();
    if (!out) throw Error(ErrorCode::kIo, fmt::format("cannot write '{}'", tmp));
  }
  if (std::rename(tmp.c_str(), o.file.c_str()) != 0)
    throw Error(ErrorCode::kIo, fmt::format("cannot rename '{}' to '{}'", tmp, o.file));
  std::cerr << fmt::format("epochcast: exported {} run(s) to {}\n", store.run_count(), o.file);
}

void import_runs(const JobsOptions& o) {
  std::ifstream in(o.file, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, fmt::format("cannot read '{}'", o.file));
  JobStore store(store_path(o), StoreMode::kReadWrite);
  const ImportResult r = store.import_jsonl(in, o.file);
  if (o.json) {
    std::cout << dump_json({{"imported", r.imported}, {"skipped_known", r.skipped_known}, {"store", store.path()}}) << "\n";
    return;
  }
  fmt::print("imported {} run(s) into {} ({} already there)\n", r.imported, store.path(), r.skipped_known);
}

void forget(const JobsOptions& o) {
  if ((o.id > 0) == !o.job.empty())
    throw Error(ErrorCode::kInvalidArgument, "jobs forget: give a run id or --job KEY (one of them)");
  JobStore store(store_path(o), StoreMode::kReadWrite);
  const std::size_t n = o.id > 0 ? store.forget_run(o.id) : store.forget_job(o.job);
  if (n == 0)
    throw Error(ErrorCode::kNotFound, o.id > 0 ? fmt::format("store '{}' has no run {}", store.path(), o.id)
                                               : fmt::format("store '{}' has no run of job '{}'", store.path(), o.job));
  if (o.json) {
    std::cout << dump_json({{"forgotten", n}}) << "\n";
    return;
  }
  fmt::print("forgot {} run(s) (with their predictions and feedback)\n", n);
}

// Measured pairs and running error per GPU pair; the calibration against the model in use.
void pairs(const JobsOptions& o) {
  const JobStore store(store_path(o), StoreMode::kReadOnly);
  const GpuCatalog catalog = load_gpu_catalog(o.catalog.empty() ? default_gpu_catalog_path() : o.catalog);
  std::shared_ptr<const StackedModel> model =
      o.model.empty() ? default_model() : std::make_shared<const StackedModel>(load_model(o.model));
  const auto runs = store.runs();
  const EpochPredictor predict = [&](const RunRecord& s, const std::string& t) {
    const GpuSpec* sg = catalog.find(s.gpu);
    const GpuSpec* tg = catalog.find(t);
    return sg && tg ? model->predict(s.features, s.epoch_s, *sg, *tg).epoch_s : 0.0;
  };
  const PairSet set = measured_pairs(runs, predict);
  const Calibration cal = fit_calibration(pair_residuals(set, runs, *model, catalog));
  std::map<std::pair<std::string, std::string>, PairPredictionError> errors;
  for (auto& e : store.prediction_errors()) errors[{e.source_gpu, e.target_gpu}] = e;
  std::map<std::pair<std::string, std::string>, int> keys;
  for (const auto& c : cal.pairs()) keys[{c.source_gpu, c.target_gpu}] = 1;
  for (const auto& [k, _] : errors) keys[k] |= 2;
  if (o.json) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& [k, _] : keys) {
      const PairCalibration* c = cal.find(k.first, k.second);
      const auto e = errors.find(k);
      a.push_back({{"source_gpu", k.first},
                   {"target_gpu", k.second},
                   {"pairs", c ? c->pairs : 0},
                   {"mean_log_residual", c ? c->mean_log_residual : 0.0},
                   {"calibration_log", c ? c->log_bias : 0.0},
                   {"checked_predictions", e == errors.end() ? 0 : e->second.checked},
                   {"prediction_mape_pct", e == errors.end() ? nlohmann::json(nullptr)
                                                             : nlohmann::json(e->second.mean_abs_error_ratio * 100)},
                   // /metrics' epochcast_prediction_error_ratio: the same figure as a fraction
                   {"prediction_error_ratio", e == errors.end() ? nlohmann::json(nullptr)
                                                                : nlohmann::json(e->second.mean_abs_error_ratio)}});
    }
    nlohmann::json refused = nlohmann::json::array();
    for (const auto& r : set.refused)
      refused.push_back({{"job_key", r.job_key}, {"runs", {r.source_run, r.target_run}}, {"reason", r.reason}});
    std::cout << dump_json({{"store", store.path()},
                            {"residual_sd_log", cal.residual_sd()},
                            {"gpu_pairs", a},
                            {"refused", refused}},
                           2)
              << "\n";
    return;
  }
  fmt::print("{:<10} {:<10} {:>6} {:>10} {:>12} {:>8} {:>10}\n", "source", "target", "pairs", "mean err",
             "calibration", "checked", "MAPE %");
  for (const auto& [k, _] : keys) {
    const PairCalibration* c = cal.find(k.first, k.second);
    const auto e = errors.find(k);
    fmt::print("{:<10} {:<10} {:>6} {:>+9.1f}% {:>11} {:>8} {:>10}\n", k.first, k.second, c ? c->pairs : 0,
               c ? (std::exp(c->mean_log_residual) - 1) * 100 : 0.0,
               c ? fmt::format("x{:.3f}", std::exp(c->log_bias)) : "-", e == errors.end() ? 0 : e->second.checked,
               e == errors.end() ? "-" : fmt::format("{:.1f}", e->second.mean_abs_error_ratio * 100));
  }
  for (const auto& r : set.refused) fmt::print("refused: {}\n", r.reason);
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
