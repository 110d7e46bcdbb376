// epochcast eval [--data CSV] [--test CSV] [--protocol kfold|lomo|logo] [--json]
#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <system_error>
#include <memory>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "fit_flags.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/service/service.hpp"

namespace epochcast::cli {

namespace {

nlohmann::json scores_json(const ErrorScores& s) {
  return {{"pairs", s.pairs},
          {"mape_pct", s.mape_pct},
          {"median_ape_pct", s.median_ape_pct},
          {"p90_ape_pct", s.p90_ape_pct},
          {"max_ape_pct", s.max_ape_pct},
          {"per_target_gpu", s.per_target_gpu_mape_pct}};
}

void print_table(const EvalReport& r) {
  std::vector<std::string> gpus;
  for (const auto& [g, _] : r.stack.per_target_gpu_mape_pct) gpus.push_back(g);
  fmt::print("protocol {}: {} held-out pairs, {} fits ({:.1f} s fitting)\n", to_string(r.protocol), r.pairs,
             r.fits, r.fit_seconds);
  fmt::print("{:<12} {:>7} {:>7} {:>7}", "learner", "MAPE%", "median", "p90");
  for (const auto& g : gpus) fmt::print(" {:>10}", g);
  fmt::print("\n");
  auto row = [&](const std::string& name, const ErrorScores& s) {
    fmt::print("{:<12} {:>7.2f} {:>7.2f} {:>7.2f}", name, s.mape_pct, s.median_ape_pct, s.p90_ape_pct);
    for (const auto& g : gpus) {
      auto it = s.per_target_gpu_mape_pct.find(g);
      fmt::print(" {:>10.2f}", it == s.per_target_gpu_mape_pct.end() ? 0.0 : it->second);
    }
    fmt::print("\n");
  };
  for (const auto& [name, s] : r.per_learner) row(name, s);
  row("stack", r.stack);
  fmt::print("{:.0f} % interval: coverage {:.1f} %, median width {:.1f} % of the prediction\n",
             r.interval_level * 100, r.interval_coverage_pct, r.interval_median_width_pct);
}

// Same columns as bench/compare_sklearn.py --dump: log(prediction / source) per pair.
void write_predictions(const EvalReport& r, std::FILE* f, const std::string& path) {
  std::string head = "workload,model,source,target,y,stack";
  for (const auto& [name, _] : r.per_learner) head += "," + name;
  // fmt::print throws std::system_error on a failed write ("cannot write to file", exit 70,
  // the file unnamed): a full disk is an I/O error naming the file.
  try {
    fmt::print(f, "{}\n", head);
    for (const auto& p : r.predictions) {
      fmt::print(f, "{},{},{},{},{:.17g},{:.17g}", p.workload, p.model, p.source_gpu, p.target_gpu,
                 std::log(p.truth_s / p.source_s), std::log(p.stack_s / p.source_s));
      for (double v : p.learner_s) fmt::print(f, ",{:.17g}", std::log(v / p.source_s));
      fmt::print(f, "\n");
    }
  } catch (const std::system_error& e) {
    throw Error(ErrorCode::kIo, "cannot write predictions to '" + path + "': " + e.code().message());
  }
  if (std::fflush(f) != 0 || std::ferror(f))
    throw Error(ErrorCode::kIo, "cannot write predictions to '" + path + "': " + std::strerror(errno));
}

void print_store_evaluation(const StoreEvaluation& e, const std::string& store, bool json) {
  if (json) {
    nlohmann::json per = nlohmann::json::array();
    for (const auto& p : e.per_gpu_pair)
      per.push_back({{"source_gpu", p.source_gpu},
                     {"target_gpu", p.target_gpu},
                     {"pairs", p.pairs},
                     {"model_mape_pct", p.model_mape_pct},
                     {"with_store_mape_pct", p.calibrated_mape_pct}});
    std::cout << dump_json({{"protocol", "leave-one-job-out"},
                            {"store", store},
                            {"jobs", e.jobs},
                            {"pairs", e.pairs},
                            {"model_mape_pct", e.model_mape_pct},
                            {"with_store_mape_pct", e.calibrated_mape_pct},
                            {"per_gpu_pair", per},
                            {"refused", e.refused}},
                           2)
              << "\n";
    return;
  }
  fmt::print("leave-one-job-out over {} ({} jobs, {} measured pairs): MAPE %\n", store, e.jobs, e.pairs);
  fmt::print("{:<10} {:<10} {:>6} {:>12} {:>12}\n", "source", "target", "pairs", "model alone", "with store");
  for (const auto& p : e.per_gpu_pair)
    fmt::print("{:<10} {:<10} {:>6} {:>12.2f} {:>12.2f}\n", p.source_gpu, p.target_gpu, p.pairs, p.model_mape_pct,
               p.calibrated_mape_pct);
  fmt::print("{:<10} {:<10} {:>6} {:>12.2f} {:>12.2f}\n", "all", "", e.pairs, e.model_mape_pct, e.calibrated_mape_pct);
  for (const auto& r : e.refused) fmt::print("refused: {}\n", r);
}

}  // namespace

void add_eval_command(CLI::App& app) {
  struct Options {
    std::string data, test, catalog, protocol = "lomo", predictions, store, model;
    bool json = false, progress = false, lenient = false, allow_missing = false;
    FitFlags fit;
  };
  auto opt = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("eval", "Cross-validate the stacked model (MAPE per learner and target GPU)");
  cmd->add_option("--data", opt->data, "dataset CSV (default: the bundled dataset)");
  cmd->add_option("--test", opt->test, "fit on --data, score the pairs formed within this CSV");
  cmd->add_option("--catalog", opt->catalog, "GPU catalog CSV (default: the bundled data/gpus.csv)");
  cmd->add_option("--protocol", opt->protocol,
                  "kfold (5 folds grouped by workload), lomo (leave one CNN model out), "
                  "logo (leave one GPU type out), public (the scaling prior on the public throughput table, "
                  "leave one GPU type out)")
      ->check(CLI::IsMember({"kfold", "lomo", "logo", "public"}));
  cmd->add_flag("--lenient", opt->lenient, "skip malformed dataset rows (counted) instead of failing");
  cmd->add_flag("--allow-missing", opt->allow_missing,
                "evaluate on a dataset that lacks metric statistic columns (a warning names them) instead of refusing it");
  add_fit_parameter_flags(*cmd, opt->fit);  // --seed, --no-prior, --xgb-rounds, ... (docs/parameters.md)
  cmd->add_option("--predictions", opt->predictions,
                  "write every held-out pair's predictions (log ratio of target to source: stack and each "
                  "learner) to this CSV");
  cmd->add_flag("--progress", opt->progress, "show progress even when stderr is not a terminal");
  cmd->add_flag("--json", opt->json, "print one JSON object");
  cmd->add_option("--store", opt->store,
                  "score the job store's measured pairs leave-one-job-out: the model alone and with the store "
                  "(docs/store.md); no fitting");
  cmd->add_option("--model", opt->model, "with --store: the model to score (default: the bundled one)");
  cmd->callback([opt] {
    keep_heap_slack();
    if (opt->protocol == "public") return run_public_eval(opt->catalog, opt->json);
    if (!opt->store.empty()) {
      ServiceConfig config;
      config.model_path = opt->model;
      config.gpu_catalog_path = opt->catalog;
      print_store_evaluation(Service(config).evaluate_store(opt->store), opt->store, opt->json);
      return;
    }
    // Opened first: a path that cannot be written fails before minutes of fitting, not after.
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> predictions(nullptr, &std::fclose);
    if (!opt->predictions.empty()) {
      predictions.reset(std::fopen(opt->predictions.c_str(), "w"));
      if (!predictions)
        throw Error(ErrorCode::kIo, "cannot write predictions to '" + opt->predictions + "': " + std::strerror(errno));
    }
    ProgressFn progress;
    if (opt->progress || isatty(STDERR_FILENO))
      progress = [](std::string_view what, std::size_t done, std::size_t total) {
        static const auto start = std::chrono::steady_clock::now();
    const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print(stderr, "\r\033[K{} {}/{} ({:.1f} s)", what, done, total, elapsed_s);
        if (done == total) fmt::print(stderr, "\n");
        std::fflush(stderr);
      };
    // What loading had to do, said on stderr (eval printed none of it: rows skipped under
    // --lenient, statistics outside their metric's limits read as missing).
    auto note = [](const Dataset& d) {
      const auto& g = d.diagnostics;
      if (g.rows_skipped)
        fmt::print(stderr, "epochcast: note: {}: {} row(s) skipped (the first, line {}: {})\n", d.source, g.rows_skipped,
                   g.skips.empty() ? 0 : g.skips.front().line, g.skips.empty() ? "" : g.skips.front().reason);
      if (g.impossible_values)
        fmt::print(stderr, "epochcast: note: {}: {} impossible value(s) read as missing; the first at {}\n", d.source,
                   g.impossible_values, g.first_impossible);
    };
    EvaluateRequest request;
    request.fit.data_path = opt->data;
    request.fit.catalog_path = opt->catalog;
    request.fit.lenient = opt->lenient;
    request.fit.allow_missing = opt->allow_missing;
    request.fit.parameters = fit_parameters_given(opt->fit);
    request.protocol = opt->protocol;
    request.test_path = opt->test;
    ServiceConfig config;
    config.progress = progress;
    const EvaluateResult evaluated = Service(config).evaluate(request);
    note(evaluated.dataset);
    if (evaluated.test) note(*evaluated.test);
    for (const auto& w : evaluated.warnings) fmt::print(stderr, "epochcast: warning: {}\n", w);
    const EvalReport& r = evaluated.report;
    if (predictions) write_predictions(r, predictions.get(), opt->predictions);
    if (opt->json) {
      nlohmann::json j = scores_json(r.stack);
      j["protocol"] = to_string(r.protocol);
      j["pairs"] = r.pairs;
      nlohmann::json learners;
      for (const auto& [name, s] : r.per_learner) learners[name] = scores_json(s);
      j["learners"] = learners;
      j["interval"] = {{"level", r.interval_level},
                       {"coverage_pct", r.interval_coverage_pct},
                       {"median_width_pct", r.interval_median_width_pct}};
      j["fits"] = r.fits;
      j["fit_seconds"] = r.fit_seconds;
      j["fit_cpu_seconds"] = r.fit_cpu_seconds;
      j["held_out"] = r.held_out;
      j["dataset"] = evaluated.dataset.source;
      // What `fit` on the same --data, --catalog and --lenient records in its model: ties these
      // figures to a model file (training.data_fingerprint).
      j["data_fingerprint"] = evaluated.data_fingerprint;
      std::cout << dump_json(j, 2) << "\n";
      return;
    }
    print_table(r);
  });
}

}  // namespace epochcast::cli
