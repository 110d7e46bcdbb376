// epochcast watch: the fleet through a PromQL endpoint (docs/watch.md). Parses, calls the
// watcher (src/fleet) pass after pass, renders a table, JSON lines, or serves them (--listen).
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include "commands.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/fleet/watch.hpp"
#include "epochcast/service/jobs.hpp"  // default_store_path
#include "epochcast/service/service.hpp"
#include "fleet_options.hpp"
#include "http_api.hpp"
#include "store_metrics.hpp"

namespace epochcast::cli {

namespace {

struct WatchArgs {
  FleetArgs fleet;
  std::string model, prices, catalog;
  std::string store;  // job store: every ended job recorded, predictions calibrated
  std::string listen;  // empty: no server
  std::string token;
  bool insecure = false;
  bool once = false;
  bool json = false;
  bool quiet = false;
};

int g_watch_wake[2] = {-1, -1};
volatile std::sig_atomic_t g_watch_stop = 0;

void on_watch_stop(int signal_number) {
  g_watch_stop = signal_number;
  const char byte = 1;
  static_cast<void>(!write(g_watch_wake[1], &byte, 1));  // async-signal-safe
}

// Waits up to `seconds` or until a stop signal; true when stopped.
bool wait_or_stop(double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (g_watch_stop == 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd fd{g_watch_wake[0], POLLIN, 0};
    const int r = poll(&fd, 1, static_cast<int>(std::min<long long>(left.count(), 60000)));
    if (r < 0 && errno != EINTR) return false;
  }
  return true;
}

std::string cell_epoch(const fleet::JobView& j) { return j.found ? fmt::format("{:.1f}", j.epoch_s) : "-"; }

void print_table(const fleet::FleetSnapshot& s) {
  fmt::print("{:<16} {:>3} {:<10} {:<28} {:<6} {:>9} {:>5}  {:<24} {}\n", "HOST", "GPU", "TYPE", "JOB", "STATE",
             "EPOCH_S", "CONF", "FASTEST", "NOTE");
  for (const auto& g : s.gpus) {
    const std::string type = g.catalog_id.value_or("?");
    if (g.jobs.empty())
      fmt::print("{:<16} {:>3} {:<10} {:<28} {:<6} {:>9} {:>5}  {:<24} {}\n", g.hostname, g.gpu, type, "-", "idle", "-",
                 "-", "-", "");
    for (const auto& j : g.jobs) {
      const std::string name = !j.job_key.empty()          ? j.job_key
                               : j.labels.contains("pod") ? j.labels.at("pod")
                                                          : j.id.substr(j.id.find('/') + 1);
      std::string fastest = "-";
      if (!j.predictions.empty())
        fastest = fmt::format("{} {:.1f} s", j.predictions.front().target_gpu, j.predictions.front().epoch_s);
      fmt::print("{:<16} {:>3} {:<10} {:<28} {:<6} {:>9} {:>5}  {:<24} {}\n", g.hostname, g.gpu, type, name.substr(0, 28),
                 j.end_unix_s ? "ended" : "busy", cell_epoch(j), j.analysed ? fmt::format("{:.2f}", j.confidence) : "-",
                 fastest, j.found ? "" : j.why.substr(0, 80));
    }
  }
  std::fflush(stdout);
}

void run_watch(const WatchArgs& a) {
  const fleet::WatchRequest request = to_watch_request(a.fleet);
  ServiceConfig config;
  config.model_path = a.model;
  config.prices_path = a.prices;
  config.gpu_catalog_path = a.catalog;
  config.hide_paths = !a.listen.empty();
  // $EPOCHCAST_STORE stands in for --store where a key asks for one (as predict --job).
  config.store_path = !a.store.empty() ? a.store : request.job_key.empty() ? std::string() : default_store_path();
  if (!request.job_key.empty() && config.store_path.empty())
    throw FieldError("job_key_template", "needs a job store to record the jobs in: --store DB or $EPOCHCAST_STORE");
  if (a.model.empty() && !a.quiet)
    std::cerr << "epochcast: loading the default model (fitted from the bundled dataset on first use)\n";
  const Service service(config);
  service.load();

  auto log_mutex = std::make_shared<std::mutex>();
  auto say = [log_mutex](const std::string& line) {
    std::lock_guard lock(*log_mutex);
    std::cerr << "epochcast watch: " << line << "\n";
  };
  fleet::Watcher watcher(service, request, {}, say);

  if (pipe(g_watch_wake) != 0) throw Error(ErrorCode::kIo, "cannot create the stop pipe");
  struct sigaction action {};
  action.sa_handler = on_watch_stop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  std::unique_ptr<server::HttpApi> api;
  std::thread server_thread;
  if (!a.listen.empty()) {
    server::ServeOptions options;
    options.listen = a.listen;
    options.token = a.token;
    options.insecure = a.insecure;
    options.threads = 2;
    options.fleet_json = [&watcher] { return fleet::fleet_json(watcher.snapshot()); };
    options.metrics.push_back([&watcher] { return fleet::fleet_metrics_text(watcher.snapshot()); });
    // With --store: the running error of the checked predictions per GPU pair, as serve's.
    if (service.has_store())
      options.metrics.push_back([&service] { return server::prediction_error_exposition(service.prediction_errors()); });
    if (!a.quiet) options.log = say;
    api = std::make_unique<server::HttpApi>(service, options);
    if (a.json) std::cout << dump_json({{"serving", api->url()}, {"port", api->port()}}) << std::endl;
    std::cerr << fmt::format("epochcast watch: serving {}/v1/fleet and {}/metrics (Ctrl-C stops)\n", api->url(), api->url());
    server_thread = std::thread([&api] { api->run(); });
  }
  const bool tty = isatty(STDERR_FILENO) == 1;
  int status = 0;
  while (g_watch_stop == 0) {
    auto progress = [&](std::size_t done, std::size_t total) {
      if (tty && !a.quiet) std::cerr << fmt::format("\repochcast watch: read {}/{} GPUs", done, total) << std::flush;
    };
    const fleet::PassStats stats = watcher.pass(progress);
    if (tty && !a.quiet) std::cerr << "\r\033[K";
    const fleet::FleetSnapshot snap = watcher.snapshot();
    if (!a.quiet) say(pass_line(snap));
    if (a.listen.empty() || a.once) {
      if (a.json) std::cout << fleet::fleet_json(snap) << std::endl;
      else print_table(snap);
    }
    if (a.once) {
      status = stats.ok ? 0 : 1;
      break;
    }
    if (wait_or_stop(std::max(0.0, request.every_s - stats.seconds))) break;
  }
  if (api) {
    api->stop();
    server_thread.join();
  }
  if (status != 0)
    throw Error(ErrorCode::kRemote, fmt::format("the pass could not read everything from {} (the errors are above)",
                                                fleet::strip_credentials(request.url)));
}

}  // namespace

void add_watch_command(CLI::App& app) {
  auto args = std::make_shared<WatchArgs>();
  auto* cmd = app.add_subcommand("watch", "Watch a fleet through Prometheus: every GPU's jobs, their epoch time and "
                                          "predictions on every GPU type (docs/watch.md)");
  add_fleet_options(*cmd, args->fleet, true);
  cmd->add_option("--listen", args->listen,
                  "serve GET /v1/fleet and /metrics (and serve's API) on HOST:PORT, :PORT or PORT (loopback by default)");
  cmd->add_option("--token", args->token, "bearer token clients must send; needed for a non-loopback --listen");
  cmd->add_flag("--insecure", args->insecure, "allow a non-loopback --listen without --token");
  cmd->add_option("--model", args->model, "model file from 'epochcast fit' (default: fitted from the bundled data)");
  cmd->add_option("--prices", args->prices, "price catalog CSV (default: the bundled data/prices.csv)");
  cmd->add_option("--catalog", args->catalog, "GPU catalog CSV (default: the bundled data/gpus.csv)");
  cmd->add_option("--store", args->store,
                  "job store: every ended job is recorded (under --job-key when given) and predictions take its "
                  "calibration (docs/store.md; default with --job-key: $EPOCHCAST_STORE)");
  cmd->add_flag("--once", args->once, "one pass, print it, exit (status 1 when a request failed)");
  cmd->add_flag("--json", args->json, "each pass as one line of GET /v1/fleet's JSON");
  cmd->add_flag("--quiet,-q", args->quiet, "no progress or pass lines on stderr (faults are still reported)");
  cmd->callback([args] { run_watch(*args); });
}

}  // namespace epochcast::cli
