// epochcast predict TRACE... : epoch time and cost on every GPU type, ranked.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/service/render.hpp"
#include "epochcast/service/service.hpp"
#include "epochcast/service/jobs.hpp"  // default_store_path
#include "trace_input.hpp"

namespace epochcast::cli {

namespace {

struct PredictCliOptions {
  std::vector<std::string> traces;
  std::string model;
  std::string source_gpu;
  std::string gpus = "all";
  int epochs = 10;
  double epoch_s = 0;
  double min_confidence = PredictRequest{}.min_detection_confidence;
  bool null_test = false;
  bool json = false;
  std::string html;
  std::string prices;
  std::string job, store;  // job store (docs/store.md)
  std::string catalog;
  std::string precision = "auto";
  std::string epochs_from = "detect";
  TraceInputOptions input;
};

// Progress on stderr: one rewriting line on a terminal, a line per stage otherwise.
ProgressFn terminal_progress() {
  const bool tty = isatty(fileno(stderr)) != 0;
  auto last_stage = std::make_shared<std::string>();
  auto started = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  return [tty, last_stage, started](std::string_view stage, std::size_t done, std::size_t total) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - *started).count();
    if (tty) {
      std::cerr << fmt::format("\r\033[K[{:5.1f} s] {} {}/{}", elapsed, stage, done, total);
      if (done >= total) std::cerr << "\n";
      std::cerr.flush();
    } else if (stage != *last_stage || done >= total) {
      std::cerr << fmt::format("[{:5.1f} s] {} {}/{}\n", elapsed, stage, done, total);
    }
    *last_stage = std::string(stage);
  };
}

void run_predict(const PredictCliOptions& o) {
  // With --prometheus the one trace comes from the server (load_trace ignores the path).
  const std::vector<std::string> paths = !o.input.prometheus_url.empty() ? std::vector<std::string>{o.input.prometheus_url}
                                         : o.traces.size() == 1 && o.traces[0] == "-"
                                             ? o.traces
                                             : expand_trace_paths(o.traces);
  const bool batch = paths.size() > 1 || (o.traces.size() == 1 && paths.size() == 1 && paths[0] != o.traces[0]);

  ServiceConfig config;
  config.model_path = o.model;
  config.prices_path = o.prices;
  config.store_path = !o.store.empty() ? o.store : o.job.empty() ? std::string() : default_store_path();
  config.gpu_catalog_path = o.catalog;
  // Fitting the default model on first use (about a minute) and long batches show progress.
  config.progress = terminal_progress();
  if (o.model.empty())
    std::cerr << "epochcast: loading the default model (fitted from the bundled dataset on first use)\n";
  PredictRequest request;
  request.source_gpu = o.source_gpu;
  request.gpus = parse_gpu_list(o.gpus, "gpus");
  request.epochs = o.epochs;
  request.source_epoch_s = o.epoch_s;
  request.min_detection_confidence = o.min_confidence;
  request.null_test = o.null_test;
  request.job_key = o.job;
  request.precision = o.precision;
  request.epochs_from_markers = o.epochs_from == "markers";
  request.validate();  // before minutes of fitting the default model

  const Service service(config);
  service.load();

  if (batch) {
    TraceRequest read = to_trace_request("", o.input);
    read.progress = nullptr;  // the batch's own progress says which trace
    const std::vector<BatchItem> items = service.predict_batch(paths, read, request);
    if (!o.html.empty()) {
      write_batch_html_report(o.html, items);  // one page: every trace's answer, then each trace
      if (!o.json) std::cerr << fmt::format("epochcast: wrote {}\n", o.html);
    }
    if (o.json) {
      std::cout << dump_json(to_json(items), 2) << "\n";
    } else {
      std::cout << render_batch_table(items);
    }
    std::cout.flush();
    return;
  }

  TraceInputOptions input = o.input;
  use_sibling_host_trace(paths[0], input, o.json);
  const Trace trace = load_trace(service, paths[0], input);
  const PredictReport report = service.predict(trace, request);
  if (!o.html.empty()) {
    write_html_report(o.html, report, trace);
    if (!o.json) std::cerr << fmt::format("epochcast: wrote {}\n", o.html);
  }
  if (o.json) {
    std::cout << dump_json(to_json(report), 2) << "\n";
  } else {
    std::cout << render_table(report);
  }
  std::cout.flush();
  // The library's warning names no flag; this one does.
  if (report.source.measured_epoch_s <= 0 && o.epoch_s == 0)
    std::cerr << "epochcast: hint: pass --epoch-s SECONDS if the source run's epoch time is known\n";
}

}  // namespace

void add_predict_command(CLI::App& app) {
  auto opts = std::make_shared<PredictCliOptions>();
  auto* cmd = app.add_subcommand(
      "predict", "Predict the epoch time and cost of a job on every GPU type from one GPU's metric log");
  cmd->add_option("traces", opts->traces,
                  "metric log(s): nvidia-smi CSV, dcgmi dmon, canonical CSV; a folder means every log in it")
      ->required();
  cmd->add_option("--model", opts->model, "model file from 'epochcast fit' (default: fitted from the bundled data)");
  cmd->add_option("--source-gpu", opts->source_gpu,
                  "GPU the trace was recorded on (catalog id or nvidia-smi name; default: the trace's name column)");
  cmd->add_option("--gpus", opts->gpus, "GPUs to predict for: all, or a comma list of catalog ids")
      ->capture_default_str();
  cmd->add_option("--epochs", opts->epochs, "number of epochs to price")->capture_default_str();
  cmd->add_option("--epoch-s", opts->epoch_s,
                  "the source run's epoch time in seconds, when known (needed if no epochs are detected)");
  cmd->add_flag("--null-test", opts->null_test,
                "detect with the null-tested whole-region search (fewer confident wrong periods, fewer finds)");
  cmd->add_option("--min-confidence", opts->min_confidence,
                  "accept a detected period at or above this confidence; lower takes weaker evidence, "
                  "with wider intervals and a warning")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--epochs-from", opts->epochs_from,
                  "where the source epoch time comes from: detect (the metrics), or markers (the job's own epoch "
                  "counter in a W&B or MLflow export; detection is reported beside it)")
      ->check(CLI::IsMember({"detect", "markers"}))
      ->capture_default_str();
  cmd->add_flag("--json", opts->json, "print one JSON object");
  cmd->add_option("--html", opts->html, "write a self-contained HTML report to FILE (several traces: one page with every trace)");
  cmd->add_option("--prices", opts->prices, "price catalog CSV (default: the bundled data/prices.csv)");
  cmd->add_option("--job", opts->job,
                  "job key: runs of one key on different GPU types become measured pairs in the job store");
  cmd->add_option("--store", opts->store,
                  "job store to record the run in and calibrate from (SQLite; default with --job: $EPOCHCAST_STORE)");
  cmd->add_option("--catalog", opts->catalog, "GPU catalog CSV (default: the bundled data/gpus.csv; data/GPUS.md)");
  cmd->add_option("--precision", opts->precision,
                  "the job's precision: auto (fp32 code, TF32 where the GPU has it), fp32, tf32, fp16, bf16")
      ->capture_default_str();
  add_trace_options(cmd, opts->input);
  cmd->callback([opts] {
    keep_heap_slack();  // fits the default model on first use
    run_predict(*opts);
  });
}

}  // namespace epochcast::cli
