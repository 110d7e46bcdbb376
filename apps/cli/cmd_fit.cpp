// epochcast fit [--data CSV] [--catalog CSV] -o MODEL [--seed N]
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "fit_flags.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/service/service.hpp"

namespace epochcast::cli {

namespace {
// One updating line on stderr: "fit: out-of-fold xgboost 7/25".
ProgressFn terminal_progress(bool enabled) {
  if (!enabled) return {};
  return [](std::string_view what, std::size_t done, std::size_t total) {
    static const auto start = std::chrono::steady_clock::now();
    const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print(stderr, "\r\033[K{} {}/{} ({:.1f} s)", what, done, total, elapsed_s);
    if (done == total) fmt::print(stderr, "\n");
    std::fflush(stderr);
  };
}

}  // namespace

namespace {
nlohmann::json scaling_prior_json(const StackedModel& m) {
  const ScalingPrior& s = m.scaling_prior();
  auto params = [](const ScalingParams& p) {
    return nlohmann::json{{"compute_exp", p.compute_exp}, {"bandwidth_exp", p.bandwidth_exp},
                          {"power_exp", p.power_exp}, {"memory_share", p.memory_share}, {"fixed_share", p.fixed_share},
                          {"legacy_tensor_eff", p.legacy_tensor_eff},
                          {"interval_q_log", p.interval_q_log}};
  };
  return {{"used", m.options().calibrated_prior && m.options().residual_over_prior},
          {"fitted_on", s.fitted_on}, {"fp32_code", params(s.fp32_code)}, {"mixed", params(s.mixed)},
          {"trusted_excess_log", m.trusted_excess_log()}};
}
}  // namespace

void add_fit_command(CLI::App& app) {
  struct Options {
    std::string data, catalog, output, store;
    bool progress = false, json = false, lenient = false, allow_missing = false;
    FitFlags fit;
  };
  auto opt = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("fit", "Fit the stacked model on a dataset and save it");
  cmd->add_option("--data", opt->data, "dataset CSV (default: the bundled dataset)");
  cmd->add_option("--catalog", opt->catalog, "GPU catalog CSV (default: the bundled data/gpus.csv)");
  cmd->add_option("-o,--output", opt->output, "model file to write")->required();
  cmd->add_flag("--lenient", opt->lenient, "skip malformed dataset rows (counted) instead of failing");
  cmd->add_flag("--allow-missing", opt->allow_missing,
                "fit a dataset that lacks metric statistic columns (those features missing for every run; a warning "
                "names them) instead of refusing it");
  add_fit_parameter_flags(*cmd, opt->fit);  // --seed, --no-prior, --xgb-rounds, ... (docs/parameters.md)
  add_help_parameters_flag(*cmd);
  cmd->add_flag("--progress", opt->progress, "show progress even when stderr is not a terminal");
  cmd->add_flag("--json", opt->json, "print a JSON summary");
  cmd->add_option("--store", opt->store,
                  "job store whose measured pairs join the training pairs (weighted, docs/store.md)");
  cmd->callback([opt] {
    keep_heap_slack();
    FitRequest request;
    request.data_path = opt->data;
    request.catalog_path = opt->catalog;
    request.lenient = opt->lenient;
    request.allow_missing = opt->allow_missing;
    request.store_path = opt->store;
    request.parameters = fit_parameters_given(opt->fit);
    ServiceConfig config;
    config.progress = terminal_progress(opt->progress || isatty(STDERR_FILENO));
    const FitResult fitted = Service(config).fit(request, opt->output);
    const StackedModel& model = fitted.model;
    const Dataset& ds = fitted.dataset;
    const double seconds = fitted.seconds;
    const double cpu_seconds = fitted.cpu_seconds;
    const ModelValidation& validation = fitted.validation;
    const auto names = model.learner_names();
    for (const auto& why : fitted.store_refused) fmt::print(stderr, "epochcast: note: {}\n", why);
    if (!fitted.store_calibration_only_note.empty())
      fmt::print(stderr, "epochcast: note: {}\n", fitted.store_calibration_only_note);
    for (const auto& w : fitted.warnings) fmt::print(stderr, "epochcast: warning: {}\n", w);
    if (opt->json) {
      nlohmann::json weights, unseen;
      for (std::size_t i = 0; i < names.size(); ++i) {
        weights[names[i]] = model.meta_weights()[i];
        unseen[names[i]] = model.meta_weights_unseen_gpu()[i];
      }
      nlohmann::json j{{"model", opt->output},
                                  {"dataset", ds.source},
                                  {"rows", ds.rows.size()},
                                  {"rows_skipped", ds.diagnostics.rows_skipped},
                                  {"impossible_values", ds.diagnostics.impossible_values},
                                  {"pairs", model.training_pairs()},
                                  {"fit_seconds", seconds},
                                  {"fit_cpu_seconds", cpu_seconds},
                                  {"schema_hash", model.schema_hash()},
                                  {"data_fingerprint", model.data_fingerprint()},
                                  {"bundled_validation_applies", validation.available},
                                  {"validation_note", validation.note},
                                  {"meta_weights", weights},
                                  {"meta_weights_unseen_gpu", unseen},
                                  {"interval_half_width_log", model.interval_half_width_log()},
                                  {"unseen_gpu_interval_half_width_log", model.unseen_gpu_interval_half_width_log()},
                                  {"source_gpus", model.source_gpus_in_training()},
                                  {"scaling_prior", scaling_prior_json(model)}};
      if (!fitted.missing_columns.empty()) j["missing_columns"] = fitted.missing_columns;  // --allow-missing
      if (!opt->store.empty())
        j["store"] = {{"path", opt->store}, {"measured_pairs", fitted.store_pairs}, {"rows", fitted.store_rows},
                      {"refused", fitted.store_refused}, {"calibration_only", fitted.store_calibration_only}};
      std::cout << dump_json(j, 2) << "\n";
      return;
    }
    fmt::print("dataset   {} ({} rows, {} skipped)\n", ds.source, ds.rows.size(), ds.diagnostics.rows_skipped);
    for (const auto& s : ds.diagnostics.skips) fmt::print("  skipped line {}: {}\n", s.line, s.reason);
    if (ds.diagnostics.impossible_values)
      fmt::print("  {} impossible value(s) read as missing; the first at {}\n", ds.diagnostics.impossible_values,
                 ds.diagnostics.first_impossible);
    fmt::print("pairs     {}\nGPUs      ", model.training_pairs());
    for (const auto& g : model.source_gpus_in_training()) fmt::print("{} ", g);
    fmt::print("\nfit       {:.2f} s, seed {}\nstack     ", seconds, model.options().seed);
    for (std::size_t i = 0; i < names.size(); ++i) fmt::print("{}={:.3f} ", names[i], model.meta_weights()[i]);
    fmt::print("\n          a GPU not in training: ");
    for (std::size_t i = 0; i < names.size(); ++i) fmt::print("{}={:.3f} ", names[i], model.meta_weights_unseen_gpu()[i]);
    fmt::print("\ninterval  {:.0f} % = prediction x/÷ {:.3f} (a GPU not in training: x/÷ {:.3f})\nschema    {}\nwrote     {}\n",
               fitted.interval_level * 100, std::exp(model.interval_half_width_log()),
               std::exp(std::max(model.interval_half_width_log(), model.unseen_gpu_interval_half_width_log())),
               model.schema_hash(), opt->output);
    if (model.options().calibrated_prior && model.options().residual_over_prior)
      for (auto [name, p] : {std::pair{"fp32 code", model.scaling_prior().fp32_code}, std::pair{"mixed", model.scaling_prior().mixed}})
        fmt::print("prior     {}: compute_exp {:.3f}, bandwidth_exp {:.3f}, power_exp {:.3f}, memory_share {:.3f}, fixed_share {:.3f}, "
                   "legacy_tensor_eff {:.3f}, 90 % interval x/÷ {:.3f} (public table, leave one GPU out)\n",
                   name, p.compute_exp, p.bandwidth_exp, p.power_exp, p.memory_share, p.fixed_share, p.legacy_tensor_eff,
                   std::exp(p.interval_q_log));
    if (model.options().calibrated_prior && model.options().residual_over_prior && model.options().shrink_span_log > 0)
      fmt::print("shrink    correction kept whole up to {:.2f}x beyond the training GPUs' compute peak or bandwidth "
                 "(chosen on the GPU-held-out folds), gone {:.0f}x further\n",
                 std::exp(model.trusted_excess_log()), std::exp(model.options().shrink_span_log));
    fmt::print("data      {}\nheld-out  {}\n", model.data_fingerprint(),
               validation.available ? "the bundled figures apply (same data, options and schema): " + validation.note
                                    : validation.note);
  });
}

}  // namespace epochcast::cli
