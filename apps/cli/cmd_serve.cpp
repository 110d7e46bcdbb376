// epochcast serve: the HTTP API (docs/http_api.md) over one loaded model, until SIGINT/SIGTERM.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include "commands.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/service/service.hpp"
#include "http_api.hpp"

namespace epochcast::cli {

namespace {

struct ServeArgs {
  std::string model;
  std::string prices;
  std::string store;  // job store: every upload recorded (docs/store.md)
  std::string catalog;
  std::string listen = "127.0.0.1:8080";
  int max_body_mb = 256;
  int threads = 4;
  std::string token;
  bool insecure = false;
  bool quiet = false;
  bool json = false;
};

int g_wake[2] = {-1, -1};
volatile std::sig_atomic_t g_stop_signal = 0;

void on_serve_stop_signal(int signal_number) {
  g_stop_signal = signal_number;
  const char byte = 1;
  static_cast<void>(!write(g_wake[1], &byte, 1));  // async-signal-safe
}

void run_serve(const ServeArgs& a) {
  ServiceConfig config;
  config.model_path = a.model;
  config.prices_path = a.prices;
  config.store_path = a.store;
  config.gpu_catalog_path = a.catalog;
  config.hide_paths = true;  // answers go to clients: no paths of this machine
  if (a.model.empty() && !a.quiet)
    std::cerr << "epochcast: loading the default model (fitted from the bundled dataset on first use)\n";
  const Service service(config);
  service.load();  // a bad model or catalog fails before the port opens

  server::ServeOptions options;
  options.listen = a.listen;
  options.max_body_bytes = static_cast<std::size_t>(a.max_body_mb) << 20;
  options.threads = a.threads;
  options.token = a.token;
  options.insecure = a.insecure;
  auto log_mutex = std::make_shared<std::mutex>();
  if (!a.quiet)
    options.log = [log_mutex](const std::string& line) {
      std::lock_guard lock(*log_mutex);
      std::cerr << "epochcast serve: " << line << "\n";
    };
  server::HttpApi api(service, options);
  const std::string model = a.model.empty() ? "default (bundled dataset)" : a.model;
  if (a.json) {
    std::cout << dump_json({{"serving", api.url()}, {"port", api.port()}, {"model", model}}) << std::endl;
  }
  std::cerr << fmt::format("epochcast: serving {} (model: {}; {} GPUs; the page at /, GET /v1 lists the endpoints; Ctrl-C stops)\n",
                           api.url(), model, service.gpu_ids().size());

  // A handler, not a blocked signal: threads the model's libraries already started (OpenMP's
  // pool) would take a process signal with its default action. Installed only now, so Ctrl-C
  // during a first-use fit still ends the process at once.
  if (pipe(g_wake) != 0) throw Error(ErrorCode::kIo, "cannot create the stop pipe");
  struct sigaction action {};
  action.sa_handler = on_serve_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  std::atomic<bool> loop_done{false};
  std::thread loop([&] {
    api.run();
    loop_done = true;
    const char byte = 0;
    static_cast<void>(!write(g_wake[1], &byte, 1));  // the loop ended on its own
  });
  char byte = 0;
  while (read(g_wake[0], &byte, 1) < 0 && errno == EINTR) {
  }
  // stop() is a no-op until the loop runs; repeat it until the loop has really returned.
  while (!loop_done) {
    api.stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  loop.join();
  if (g_stop_signal == 0) throw Error(ErrorCode::kIo, fmt::format("the server at {} stopped listening", api.url()));
  if (!a.quiet) std::cerr << "epochcast: stopped\n";
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto args = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand("serve", "Serve detect and predict over HTTP (JSON API, docs/http_api.md)");
  cmd->add_option("--model", args->model, "model file from 'epochcast fit' (default: fitted from the bundled data)");
  cmd->add_option("--prices", args->prices, "price catalog CSV (default: the bundled data/prices.csv)");
  cmd->add_option("--store", args->store,
                  "job store (SQLite): record every upload, calibrate from its measured pairs; ?job=KEY names the job");
  cmd->add_option("--catalog", args->catalog, "GPU catalog CSV (default: the bundled data/gpus.csv)");
  cmd->add_option("--listen", args->listen, "HOST:PORT, :PORT or PORT to listen on (port 0 picks a free one)")
      ->capture_default_str();
  cmd->add_option("--max-body-mb", args->max_body_mb, "largest upload accepted, MiB (larger: HTTP 413)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--threads", args->threads, "requests served at once")->check(CLI::Range(1, 256))->capture_default_str();
  cmd->add_option("--token", args->token,
                  "bearer token clients must send (Authorization: Bearer TOKEN; GET /healthz excepted); needed "
                  "to --listen on a non-loopback address");
  cmd->add_flag("--insecure", args->insecure, "allow a non-loopback --listen without --token");
  cmd->add_flag("--quiet,-q", args->quiet, "no start-up notes and no request log on stderr");
  cmd->add_flag("--json", args->json, "print one JSON line {serving, port, model} on stdout once listening");
  cmd->callback([args] { run_serve(*args); });
}

}  // namespace epochcast::cli
