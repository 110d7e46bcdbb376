// epochcast collect: sample the GPUs through NVML into a canonical CSV trace, optionally
// serving /metrics and running the training command whose GPUs it watches.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "epochcast/collect/child_process.hpp"
#include "epochcast/service/live_status.hpp"
#include "epochcast/collect/metrics_server.hpp"
#include "epochcast/collect/nvml.hpp"
#include "epochcast/collect/sampler.hpp"
#include "epochcast/collect/trace_file.hpp"
#include "epochcast/core/error.hpp"

namespace epochcast::cli {

namespace {

std::atomic<int> g_signal{0};

extern "C" void on_stop_signal(int sig) { g_signal = sig; }

struct CollectArgs {
  std::string output;
  int interval_ms = 100;
  std::optional<double> duration_s;
  std::string gpu = "all";
  bool host = false;
  bool pcie = false;
  std::string listen;
  std::string token;
  bool insecure = false;
  bool quiet = false;
  bool status = false;
  bool force = false;
  std::string job;    // the run's job key: predicted and recorded in the store at the end
  std::string store;  // job store for --job (default $EPOCHCAST_STORE)
  std::vector<std::string> command;
};

// `predict TRACE` as the end of a collection; with --job, recorded under that key (docs/store.md).
std::vector<std::string> predict_command(const CollectArgs& args) {
  std::vector<std::string> cmd = {"/proc/self/exe", "predict", args.output};
  if (!args.job.empty()) {
    cmd.insert(cmd.end(), {"--job", args.job});
    if (!args.store.empty()) cmd.insert(cmd.end(), {"--store", args.store});
  }
  return cmd;
}

void run_collect(const CollectArgs& args) {
  if (args.output.empty() && args.listen.empty())
    throw Error(ErrorCode::kInvalidArgument, "collect: give -o TRACE, --listen ADDR, or both");
  if (args.interval_ms < 1) throw Error(ErrorCode::kInvalidArgument, "--interval-ms must be at least 1");
  if (args.duration_s && !(*args.duration_s > 0)) throw Error(ErrorCode::kInvalidArgument, "--duration must be > 0");
  if (!args.job.empty() && (args.output.empty() || args.output == "-"))
    throw Error(ErrorCode::kInvalidArgument, "--job needs -o TRACE: the run is predicted from that file when sampling ends");
  if (!args.store.empty() && args.job.empty())
    throw Error(ErrorCode::kInvalidArgument, "--store needs --job KEY (the key the run is recorded under)");

  // A previous collection is not overwritten by a repeated command line: that is lost data.
  // Empty files (mktemp), devices and FIFOs are written as before.
  if (!args.output.empty() && args.output != "-" && !args.force) {
    struct stat st {};
    if (::stat(args.output.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
      throw Error(ErrorCode::kIo,
                  fmt::format("-o {}: the file exists and holds {} bytes (a previous trace?); choose another name, or "
                              "pass --force to overwrite it",
                              args.output, static_cast<long long>(st.st_size)));
  }

  SamplerOptions options;
  options.interval = std::chrono::milliseconds(args.interval_ms);
  options.duration_s = args.duration_s;
  try {
    options.gpus = collect::parse_gpu_list(args.gpu);
  } catch (const Error& e) {
    throw Error(e.code(), std::string("--gpu: ") + e.what());
  }
  options.host = args.host;
  options.pcie = args.pcie;

  Nvml nvml;  // Error(kDevice) with the cause when there is no driver
  Sampler sampler(nvml, options);
  const auto& gpus = sampler.gpus();
  std::optional<LiveStatus> status;
  if (args.status || (!args.quiet && isatty(STDERR_FILENO)))
    status.emplace(sampler.columns(), std::cerr,
                   LiveStatusOptions{.style = isatty(STDERR_FILENO) ? StatusStyle::kTerminal : StatusStyle::kLines});
  auto say = [&](const std::string& text) {
    if (status) status->message(text);
    else std::cerr << "epochcast collect: " << text << "\n";
  };

  std::unique_ptr<TraceFileWriter> writer;
  if (!args.output.empty()) writer = std::make_unique<TraceFileWriter>(args.output, sampler.columns(), gpus.front());
  std::unique_ptr<MetricsServer> server;
  if (!args.listen.empty()) server = std::make_unique<MetricsServer>(args.listen, gpus, MetricsServerOptions{args.token, args.insecure});

  if (writer) writer->flush_in_background();  // a slow sync never delays a tick
  if (!args.quiet) {
    std::string names;
    for (const auto& g : gpus) names += fmt::format("{}GPU {} ({})", names.empty() ? "" : ", ", g.index, g.name);
    std::cerr << fmt::format("epochcast collect: {} every {} ms, {} metrics{}{}{}\n", names, args.interval_ms,
                             sampler.columns().size(), writer ? " -> " + args.output : "",
                             server ? ", serving " + server->url() : "",
                             args.duration_s ? fmt::format(", for {} s", *args.duration_s) : "");
  } else if (server && args.listen.ends_with(":0")) {
    // the system chose the port: even -q must say which, or nobody can scrape it
    std::cerr << "epochcast collect: serving " << server->url() << "\n";
  }

  g_signal = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int {}, old_term {};
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);

  std::optional<ChildProcess> child;
  if (!args.command.empty()) child.emplace(args.command);
  std::optional<int> child_status;
  bool forwarded = false;

  SamplerHooks hooks;
  std::optional<Error> write_error;
  hooks.on_tick = [&](const Tick& tick) {
    for (const GpuSample& s : tick.gpus) {
      if (writer && !write_error) {
        try {
          writer->append(tick.unix_s, gpus[s.slot], s.values);
        } catch (const Error& e) {
          write_error = e;  // disk full: stop, say so, keep the training command running
          sampler.stop();
        }
      }
      if (server) server->update(s.slot, s.values);
    }
    if (status) status->add(tick);
  };
  hooks.on_message = [&](const std::string& text) {
    if (!args.quiet || text.starts_with("error") || text.starts_with("gap")) say(text);
    if (writer && !write_error) writer->comment(text);
  };
  hooks.should_stop = [&] {
    if (g_signal && child && !forwarded && g_signal == SIGTERM) {
      child->signal(SIGTERM);
      forwarded = true;
    }
    if (g_signal) return true;
    if (child && (child_status = child->poll())) return true;
    return false;
  };
  sampler.run(hooks);
  if (status) status->finish();

  const SamplerStats& stats = sampler.stats();
  const std::string schedule = describe_schedule(stats);
  std::optional<Error> close_error = write_error;
  if (writer && !write_error) {
    writer->comment("sampler: " + schedule);
    try {
      writer->close();
    } catch (const Error& e) {
      close_error = e;
    }
  }
  if (!args.quiet)
    std::cerr << fmt::format("epochcast collect: {}; {} rows, {} failed reads{}{}{}\n", schedule,
                             writer ? writer->rows() : 0, stats.failed_reads,
                             stats.impossible_values
                                 ? fmt::format(", {} impossible readings left empty", stats.impossible_values)
                                 : "",
                             g_signal ? fmt::format(", stopped by signal {}", g_signal.load()) : "",
                             writer ? "; trace in " + args.output : "");
  server.reset();

  if (child && !child_status) {
    if (!args.quiet && !g_signal) std::cerr << "epochcast collect: sampling ended; waiting for the command to exit\n";
    child_status = child->wait();
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);

  if (close_error) throw *close_error;
  if (!stats.errors.empty() && !child)
    throw Error(ErrorCode::kDevice, fmt::format("{}; the trace up to then is kept{}", stats.errors.front(),
                                                writer ? " in " + args.output : ""));
  if (child) {
    if (!stats.errors.empty()) std::cerr << "epochcast collect: error: " << stats.errors.front() << "\n";
    if (writer && writer->rows() > 0) {
      std::cout << "\n== detect " << args.output << " ==\n" << std::flush;
      run_to_end({"/proc/self/exe", "detect", args.output});
      std::cout << "\n== predict " << args.output << " ==\n" << std::flush;
      run_to_end(predict_command(args));
    }
    std::cout << std::flush;
    std::exit(*child_status);  // the training command's status is ours
  }
  if (!args.job.empty() && writer && writer->rows() > 0) {
    std::cout << "\n== predict " << args.output << " (job " << args.job << ") ==\n" << std::flush;
    run_to_end(predict_command(args));
  }
}

}  // namespace

void add_collect_command(CLI::App& app) {
  auto args = std::make_shared<CollectArgs>();
  auto* cmd = app.add_subcommand("collect", "Sample the GPUs through NVML into a canonical CSV trace");
  cmd->add_option("-o,--output", args->output, "Trace file to write (canonical CSV, synced every second)");
  cmd->add_flag("--force", args->force, "Overwrite an existing, non-empty -o file (else refused)");
  cmd->add_option("--interval-ms", args->interval_ms, "Sampling interval in milliseconds")->capture_default_str();
  cmd->add_option("--duration", args->duration_s, "Stop after this many seconds");
  cmd->add_option("--gpu", args->gpu, "GPUs to sample: all, N or N,M")->capture_default_str();
  cmd->add_flag("--host", args->host, "Also sample host CPU and memory from /proc");
  cmd->add_flag("--pcie", args->pcie, "Also sample PCIe throughput (its own thread; ~20 ms per driver call)");
  cmd->add_option("--listen", args->listen,
                  "Serve /metrics (dcgm-exporter names) at HOST:PORT, :PORT or PORT (0 = a free port; "
                  "no HOST: 127.0.0.1)");
  cmd->add_option("--token", args->token,
                  "Bearer token scrapers must send (Authorization: Bearer TOKEN); needed for a non-loopback --listen");
  cmd->add_flag("--insecure", args->insecure, "Allow a non-loopback --listen without --token");
  cmd->add_flag("-q,--quiet", args->quiet, "No status line or summary");
  cmd->add_flag("--status", args->status,
                "Live status (period estimate) even when stderr is not a terminal: one line per second");
  cmd->add_option("--job", args->job,
                  "job key: when sampling ends, predict from the trace and record the run under this key in the "
                  "job store (docs/store.md; needs -o)");
  cmd->add_option("--store", args->store, "job store for --job (default: $EPOCHCAST_STORE)");
  cmd->add_option("command", args->command, "-- COMMAND ARGS…: run it, sample until it exits, return its status");
  cmd->callback([args] { run_collect(*args); });
}

}  // namespace epochcast::cli
