// epochcast collect: sample the GPUs through NVML into a canonical CSV trace, optionally
// serving /metrics and running the training command whose GPUs it watches.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
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
#include "epochcast/collect/metrics_server.hpp"
#include "epochcast/collect/nvml.hpp"
#include "epochcast/collect/sampler.hpp"
#include "epochcast/collect/trace_file.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/epoch/detect.hpp"

extern char** environ;

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
  bool quiet = false;
  std::vector<std::string> command;
};

std::vector<unsigned> parse_gpus(const std::string& text) {
  std::vector<unsigned> out;
  if (text == "all") return out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    try {
      std::size_t used = 0;
      const int v = std::stoi(item, &used);
      if (used != item.size() || v < 0) throw std::invalid_argument(item);
      out.push_back(static_cast<unsigned>(v));
    } catch (const std::exception&) {
      throw Error(ErrorCode::kInvalidArgument, fmt::format("--gpu '{}': expected all, N or N,M,…", text));
    }
    begin = end + 1;
  }
  return out;
}

pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (const int rc = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ); rc != 0)
    throw Error(ErrorCode::kIo, fmt::format("cannot start '{}': {}", args[0], std::strerror(rc)));
  return pid;
}

int wait_status(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// Live status on a terminal: samples, utilisation and power of the first GPU, and the
// incremental detector's epochs, period and confidence.
class StatusLine {
 public:
  explicit StatusLine(bool enabled) : enabled_(enabled) {}

  void add(const Tick& tick) {
    if (!enabled_ || tick.gpus.empty()) return;
    const MetricValues& v = tick.gpus.front().values;
    util_ = v[static_cast<std::size_t>(Metric::kGpuUtil)];
    power_ = v[static_cast<std::size_t>(Metric::kPower)];
    ++samples_;
    if (batch_.time_s.empty()) {
      batch_.start_unix_s = tick.unix_s;
      batch_.channel(Metric::kGpuUtil);
      batch_.channel(Metric::kPower);
    }
    batch_.time_s.push_back(tick.unix_s - batch_.start_unix_s);
    batch_.find(Metric::kGpuUtil)->values.push_back(util_);
    batch_.find(Metric::kPower)->values.push_back(power_);
    if (tick.elapsed_s - last_print_s_ >= 1.0) {
      detector_.push(batch_);  // the whole trace so far (same start): the detector replaces its copy
      print(tick.elapsed_s);
      last_print_s_ = tick.elapsed_s;
    }
  }
  void message(const std::string& text) {
    if (enabled_) std::cerr << "\r\x1b[K";
    std::cerr << "epochcast collect: " << text << "\n";
  }
  void finish() {
    if (enabled_ && samples_ > 0) std::cerr << "\n";
  }

 private:
  void print(double elapsed_s) {
    const Segmentation& s = detector_.current();
    std::string detect = "period: —";
    if (s.found)
      detect = fmt::format("epochs {}, period {:.2f} s (confidence {:.2f})", s.epochs.size(), s.period_s, s.confidence);
    std::cerr << fmt::format("\r\x1b[K{:.0f} s  {} samples  GPU {:.0f} %  {:.0f} W  {}", elapsed_s, samples_,
                             std::isfinite(util_) ? util_ : 0.0, std::isfinite(power_) ? power_ : 0.0, detect)
              << std::flush;
  }

  bool enabled_;
  std::uint64_t samples_ = 0;
  double util_ = NAN, power_ = NAN;
  double last_print_s_ = 0;
  Trace batch_;
  Detector detector_;
};

void run_collect(const CollectArgs& args) {
  if (args.output.empty() && args.listen.empty())
    throw Error(ErrorCode::kInvalidArgument, "collect: give -o TRACE, --listen ADDR, or both");
  if (args.interval_ms < 1) throw Error(ErrorCode::kInvalidArgument, "--interval-ms must be at least 1");
  if (args.duration_s && !(*args.duration_s > 0)) throw Error(ErrorCode::kInvalidArgument, "--duration must be > 0");

  SamplerOptions options;
  options.interval = std::chrono::milliseconds(args.interval_ms);
  options.duration_s = args.duration_s;
  options.gpus = parse_gpus(args.gpu);
  options.host = args.host;
  options.pcie = args.pcie;

  Nvml nvml;  // Error(kDevice) with the cause when there is no driver
  Sampler sampler(nvml, options);
  const auto& gpus = sampler.gpus();
  StatusLine status(!args.quiet && isatty(STDERR_FILENO));

  std::unique_ptr<TraceFileWriter> writer;
  if (!args.output.empty()) writer = std::make_unique<TraceFileWriter>(args.output, sampler.columns(), gpus.front());
  std::unique_ptr<MetricsServer> server;
  if (!args.listen.empty()) server = std::make_unique<MetricsServer>(args.listen, gpus);

  if (!args.quiet) {
    std::string names;
    for (const auto& g : gpus) names += fmt::format("{}GPU {} ({})", names.empty() ? "" : ", ", g.index, g.name);
    std::cerr << fmt::format("epochcast collect: {} every {} ms, {} metrics{}{}{}\n", names, args.interval_ms,
                             sampler.columns().size(), writer ? " -> " + args.output : "",
                             server ? ", serving " + server->url() : "",
                             args.duration_s ? fmt::format(", for {} s", *args.duration_s) : "");
  }

  g_signal = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int {}, old_term {};
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);

  std::optional<pid_t> child;
  if (!args.command.empty()) child = spawn(args.command);
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
    status.add(tick);
  };
  hooks.on_message = [&](const std::string& text) {
    if (!args.quiet || text.starts_with("error")) status.message(text);
    if (writer && !write_error) writer->comment(text);
  };
  hooks.should_stop = [&] {
    if (g_signal && child && !forwarded && g_signal == SIGTERM) {
      kill(*child, SIGTERM);
      forwarded = true;
    }
    if (g_signal) return true;
    if (child) {
      int st = 0;
      if (waitpid(*child, &st, WNOHANG) == *child) {
        child_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        return true;
      }
    }
    return false;
  };
  sampler.run(hooks);
  status.finish();

  const SamplerStats& stats = sampler.stats();
  std::optional<Error> close_error = write_error;
  if (writer && !write_error) {
    try {
      writer->close();
    } catch (const Error& e) {
      close_error = e;
    }
  }
  if (!args.quiet)
    std::cerr << fmt::format("epochcast collect: {} ticks, {} rows, {} missed ticks, {} failed reads{}{}\n", stats.ticks,
                             writer ? writer->rows() : 0, stats.missed_ticks, stats.failed_reads,
                             g_signal ? fmt::format(", stopped by signal {}", g_signal.load()) : "",
                             writer ? "; trace in " + args.output : "");
  server.reset();

  if (child && !child_status) {
    if (!args.quiet && !g_signal) std::cerr << "epochcast collect: sampling ended; waiting for the command to exit\n";
    child_status = wait_status(*child);
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
      wait_status(spawn({"/proc/self/exe", "detect", args.output}));
      std::cout << "\n== predict " << args.output << " ==\n" << std::flush;
      wait_status(spawn({"/proc/self/exe", "predict", args.output}));
    }
    std::cout << std::flush;
    std::exit(*child_status);  // the training command's status is ours
  }
}

}  // namespace

void add_collect_command(CLI::App& app) {
  auto args = std::make_shared<CollectArgs>();
  auto* cmd = app.add_subcommand("collect", "Sample the GPUs through NVML into a canonical CSV trace");
  cmd->add_option("-o,--output", args->output, "Trace file to write (canonical CSV, synced every second)");
  cmd->add_option("--interval-ms", args->interval_ms, "Sampling interval in milliseconds")->capture_default_str();
  cmd->add_option("--duration", args->duration_s, "Stop after this many seconds");
  cmd->add_option("--gpu", args->gpu, "GPUs to sample: all, N or N,M")->capture_default_str();
  cmd->add_flag("--host", args->host, "Also sample host CPU and memory from /proc");
  cmd->add_flag("--pcie", args->pcie, "Also sample PCIe throughput (its own thread; ~20 ms per driver call)");
  cmd->add_option("--listen", args->listen,
                  "Serve /metrics (dcgm-exporter names) at HOST:PORT, :PORT or PORT (0 = a free port)");
  cmd->add_flag("-q,--quiet", args->quiet, "No status line or summary");
  cmd->add_option("command", args->command, "-- COMMAND ARGS…: run it, sample until it exits, return its status");
  cmd->callback([args] { run_collect(*args); });
}

}  // namespace epochcast::cli
