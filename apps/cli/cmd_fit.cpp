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
#include "epochcast/core/error.hpp"
#include "epochcast/model/stacked_model.hpp"
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

// Checked before fitting. save_model writes beside the path and renames into place, which over
// a device, FIFO or directory replaces the node itself (as root, `-o /dev/full` did).
void check_output_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw Error(ErrorCode::kIo, fmt::format("cannot write model file '{}': it exists and is not a regular file "
                                            "(the model is written beside it and renamed into place)", path));
  const fs::path parent = fs::path(path).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw Error(ErrorCode::kIo, fmt::format("cannot write model file '{}': folder '{}': {}", path, dir,
                                            std::strerror(errno)));
}
}  // namespace

namespace {
nlohmann::json scaling_prior_json(const StackedModel& m) {
  const ScalingPrior& s = m.scaling_prior();
  auto params = [](const ScalingParams& p) {
    return nlohmann::json{{"compute_exp", p.compute_exp}, {"bandwidth_exp", p.bandwidth_exp},
                          {"power_exp", p.power_exp}, {"memory_share", p.memory_share}, {"fixed_share", p.fixed_share},
                          {"interval_q_log", p.interval_q_log}};
  };
  return {{"used", m.options().calibrated_prior && m.options().residual_over_prior},
          {"fitted_on", s.fitted_on}, {"fp32_code", params(s.fp32_code)}, {"mixed", params(s.mixed)}};
}
}  // namespace

void add_fit_command(CLI::App& app) {
  struct Options {
    std::string data, catalog, output;
    std::uint64_t seed = 42;
    bool progress = false, json = false, lenient = false, memory_features = false;
    bool no_prior = false, no_gpu_folds = false, linear_ridge = false, format5_prior = false, no_shrink = false;
  };
  auto opt = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("fit", "Fit the stacked model on a dataset and save it");
  cmd->add_option("--data", opt->data, "dataset CSV (default: the bundled dataset)");
  cmd->add_option("--catalog", opt->catalog, "GPU catalog CSV (default: the bundled data/gpus.csv)");
  cmd->add_option("-o,--output", opt->output, "model file to write")->required();
  cmd->add_option("--seed", opt->seed, "random seed (the fit is deterministic given it)")
      ->check(kNotNegative);
  cmd->add_flag("--lenient", opt->lenient, "skip malformed dataset rows (counted) instead of failing");
  cmd->add_flag("--memory-features", opt->memory_features,
                "also use memory used/free/total (framework-dependent; off by default)");
  cmd->add_flag("--no-prior", opt->no_prior,
                "learners fit log(target/source) itself, not the correction to the Amdahl prior");
  cmd->add_flag("--format5-prior", opt->format5_prior,
                "model format 5's parameter-free prior (amdahl.memory_clock_split) in place of the scaling prior "
                "calibrated on the public throughput table");
  cmd->add_flag("--no-shrink", opt->no_shrink,
                "trust the learned correction on GPUs outside the training GPUs' specs (no shrinking toward the prior)");
  cmd->add_flag("--no-gpu-folds", opt->no_gpu_folds,
                "fit the stack weights on model-grouped folds only (no GPU-held-out folds, no unseen-GPU interval)");
  cmd->add_flag("--linear-ridge", opt->linear_ridge,
                "the stack of model format 3: linear ridge in place of kernel ridge, one set of meta weights, "
                "XGBoost 150 rounds at eta 0.1 (docs/model.md)");
  cmd->add_flag("--progress", opt->progress, "show progress even when stderr is not a terminal");
  cmd->add_flag("--json", opt->json, "print a JSON summary");
  cmd->callback([opt] {
    keep_heap_slack();
    check_output_path(opt->output);
    const GpuCatalog catalog = load_gpu_catalog(opt->catalog.empty() ? default_gpu_catalog_path() : opt->catalog);
    DatasetOptions dopt;
    dopt.lenient = opt->lenient;
    const Dataset ds = load_dataset(opt->data.empty() ? default_dataset_path() : opt->data, catalog, dopt);
    FitOptions fopt;
    fopt.seed = opt->seed;
    fopt.include_memory_features = opt->memory_features;
    fopt.residual_over_prior = !opt->no_prior;
    fopt.calibrated_prior = !opt->format5_prior;
    if (opt->no_shrink) fopt.shrink_span_log = 0;
    fopt.meta_gpu_folds = !opt->no_gpu_folds;
    if (opt->linear_ridge) {
      fopt.kernel_ridge = false;
      fopt.xgb_rounds = 150;
      fopt.xgb_eta = 0.1;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t cpu0 = std::clock();  // process CPU time, all threads
    const StackedModel model =
        fit_model(ds, catalog, fopt, terminal_progress(opt->progress || isatty(STDERR_FILENO)));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu_seconds = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
    save_model(model, opt->output);
    const auto names = model.learner_names();
    // Whether the bundled held-out figures describe this model (predict shows them only then).
    const ModelValidation validation = bundled_validation(model);
    if (opt->json) {
      nlohmann::json weights, unseen;
      for (std::size_t i = 0; i < names.size(); ++i) {
        weights[names[i]] = model.meta_weights()[i];
        unseen[names[i]] = model.meta_weights_unseen_gpu()[i];
      }
      std::cout << dump_json(nlohmann::json{{"model", opt->output},
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
                                  {"scaling_prior", scaling_prior_json(model)}},
                               2)
                << "\n";
      return;
    }
    fmt::print("dataset   {} ({} rows, {} skipped)\n", ds.source, ds.rows.size(), ds.diagnostics.rows_skipped);
    for (const auto& s : ds.diagnostics.skips) fmt::print("  skipped line {}: {}\n", s.line, s.reason);
    if (ds.diagnostics.impossible_values)
      fmt::print("  {} impossible value(s) read as missing; the first at {}\n", ds.diagnostics.impossible_values,
                 ds.diagnostics.first_impossible);
    fmt::print("pairs     {}\nGPUs      ", model.training_pairs());
    for (const auto& g : model.source_gpus_in_training()) fmt::print("{} ", g);
    fmt::print("\nfit       {:.2f} s, seed {}\nstack     ", seconds, opt->seed);
    for (std::size_t i = 0; i < names.size(); ++i) fmt::print("{}={:.3f} ", names[i], model.meta_weights()[i]);
    fmt::print("\n          a GPU not in training: ");
    for (std::size_t i = 0; i < names.size(); ++i) fmt::print("{}={:.3f} ", names[i], model.meta_weights_unseen_gpu()[i]);
    fmt::print("\ninterval  {:.0f} % = prediction x/÷ {:.3f} (a GPU not in training: x/÷ {:.3f})\nschema    {}\nwrote     {}\n",
               fopt.interval_level * 100, std::exp(model.interval_half_width_log()),
               std::exp(std::max(model.interval_half_width_log(), model.unseen_gpu_interval_half_width_log())),
               model.schema_hash(), opt->output);
    if (fopt.calibrated_prior && fopt.residual_over_prior)
      for (auto [name, p] : {std::pair{"fp32 code", model.scaling_prior().fp32_code}, std::pair{"mixed", model.scaling_prior().mixed}})
        fmt::print("prior     {}: compute_exp {:.3f}, bandwidth_exp {:.3f}, power_exp {:.3f}, memory_share {:.3f}, fixed_share {:.3f}, "
                   "90 % interval x/÷ {:.3f} (public table, leave one GPU out)\n",
                   name, p.compute_exp, p.bandwidth_exp, p.power_exp, p.memory_share, p.fixed_share, std::exp(p.interval_q_log));
    fmt::print("data      {}\nheld-out  {}\n", model.data_fingerprint(),
               validation.available ? "the bundled figures apply (same data, options and schema): " + validation.note
                                    : validation.note);
  });
}

}  // namespace epochcast::cli
