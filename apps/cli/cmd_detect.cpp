// epochcast detect TRACE: the epoch period, boundaries and confidence of a training trace.
// --follow reads a growing file and prints a line whenever the estimate changes.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "commands.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/service/follow.hpp"
#include "epochcast/service/render.hpp"  // to_json(Segmentation): the one detect object
#include "epochcast/service/service.hpp"
#include "trace_input.hpp"

namespace epochcast::cli {
namespace {

struct DetectArgs {
  std::string path;
  TraceInputOptions input;
  bool json = false;
  std::string plot_path;
  bool follow = false;
  double idle_timeout_s = 10;
  int poll_ms = 200;
  DetectRequest detect;
};

std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) { g_interrupted = true; }

// A guessed clock makes every period a guess too: said before anything else.
std::string assumed_clock_line(const Trace& trace) {
  if (trace.diagnostics.time_axis != TimeAxis::kAssumedInterval) return {};
  return fmt::format("assumed      samples {:g} s apart: the log has no timestamps and states no interval; every time "
                     "below scales with it (pass --interval S)\n",
                     trace.diagnostics.interval_s);
}

void print_table(const Trace& trace, const Segmentation& seg) {
  std::cout << assumed_clock_line(trace);
  std::cout << fmt::format("{:<12} {} ({}{}{})\n", "trace", trace.source, trace.format,
                           trace.gpu.name.empty() ? "" : ", ", trace.gpu.name);
  std::cout << fmt::format("{:<12} {} samples, every {:.3g} s, {:.1f} s\n", "samples", trace.size(),
                           seg.interval_s, trace.duration_s());
  std::cout << fmt::format("{:<12} {}\n", "found", seg.found ? "yes" : "no");
  if (seg.found)
    std::cout << fmt::format("{:<12} {:.3f} s ({:.1f} samples)\n", "period", seg.period_s, seg.period_samples);
  else if (seg.candidate_period_s > 0)
    std::cout << fmt::format("{:<12} {:.3f} s (not confirmed)\n", "best guess", seg.candidate_period_s);
  std::cout << fmt::format("{:<12} {:.2f}\n", "confidence", seg.confidence);
  std::string channels;
  for (const auto& c : seg.channels) channels += (channels.empty() ? "" : ", ") + c;
  std::cout << fmt::format("{:<12} {}\n", "channels", channels.empty() ? "-" : channels);
  if (seg.training_end_s > seg.training_start_s)
    std::cout << fmt::format("{:<12} {:.2f} s .. {:.2f} s from the first sample ({})\n", "training",
                             seg.training_start_s, seg.training_end_s, seg.first_timestamp);
  std::cout << fmt::format("{:<12} {}\n", "reason", seg.reason);
  if (!seg.epochs.empty()) {
    std::cout << fmt::format("\n{:>5} {:>10} {:>10} {:>10}\n", "epoch", "start_s", "end_s", "seconds");
    for (std::size_t i = 0; i < seg.epochs.size(); ++i) {
      const auto& e = seg.epochs[i];
      std::cout << fmt::format("{:>5} {:>10.2f} {:>10.2f} {:>10.2f}\n", i + 1, e.start_s, e.end_s, e.end_s - e.start_s);
    }
  }
  if (!trace.diagnostics.warnings.empty()) {
    std::cout << "\nwarnings:\n";
    for (const auto& w : trace.diagnostics.warnings) std::cout << "  - " << w << "\n";
  }
}

void write_plot(const std::string& path, const Trace& trace, const Segmentation& seg) {
  if (path.size() < 4 || path.substr(path.size() - 4) != ".svg")
    throw Error(ErrorCode::kUnsupported, fmt::format("--plot {}: only .svg pictures are written", path));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(ErrorCode::kIo, fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  out << render_detection_svg(trace, seg);
  out.close();  // the tail is written here: a full disk shows only now
  if (!out) throw Error(ErrorCode::kIo, fmt::format("error writing {}: {}", path, std::strerror(errno)));
}

std::string follow_line(const Trace& trace, const Segmentation& seg) {
  const double at = trace.duration_s();
  if (seg.found)
    return fmt::format("t={:.1f}s samples={} period={:.3f}s confidence={:.2f} epochs={}", at, trace.size(),
                       seg.period_s, seg.confidence, seg.epochs.size());
  return fmt::format("t={:.1f}s samples={} no period yet (confidence {:.2f}): {}", at, trace.size(),
                     seg.confidence, seg.reason);
}

void run_follow(const DetectArgs& args) {
  if (args.path == "-") throw Error(ErrorCode::kInvalidArgument, "--follow needs a file, not stdin");
  // A folder opens as a stream and then reads nothing: it was followed until the idle timeout
  // and ended with exit 0 and no output.
  if (std::error_code ec; std::filesystem::is_directory(args.path, ec))
    throw Error(ErrorCode::kIo, fmt::format("cannot read '{}': it is a folder", args.path));
  std::ifstream in(args.path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, fmt::format("cannot open {}: {}", args.path, std::strerror(errno)));
  const TraceRequest read = to_trace_request(args.path, args.input);
  if (!read.host_path.empty())
    std::cerr << "epochcast: note: --host is not merged while following; GPU channels only\n";
  DetectionFollower follower(args.path, read, args.detect);
  g_interrupted = false;
  auto previous = std::signal(SIGINT, on_sigint);
  std::vector<char> buffer(1 << 16);
  auto last_data = std::chrono::steady_clock::now();
  auto report = [&](const Segmentation& seg) {
    if (args.json) {
      auto j = to_json(seg);
      j["samples"] = follower.trace().size();
      j["warnings"] = follower.trace().diagnostics.warnings;
      std::cout << dump_json(j) << std::endl;
    } else {
      std::cout << follow_line(follower.trace(), seg) << std::endl;
    }
  };
  // A file truncated or rewritten under us (`> log` when training restarts, copytruncate
  // rotation) was read on from the old offset: the new file's bytes mid-line, ending in a
  // misleading "wrong column count". The first bytes read and the offset tell.
  constexpr std::size_t kHeadBytes = 4096;
  std::string head;
  std::uint64_t offset = 0;
  auto check_unchanged = [&] {
    std::error_code ec;
    const std::uint64_t size = std::filesystem::file_size(args.path, ec);
    std::string why;
    if (!ec && size < offset) {
      why = fmt::format("it shrank from {} to {} bytes", offset, size);
    } else if (std::ifstream again(args.path, std::ios::binary); again && !head.empty()) {
      // (A removed path is not checked: the open file is followed on, as `tail -f` does.)
      std::string now(head.size(), '\0');
      again.read(now.data(), static_cast<std::streamsize>(now.size()));
      now.resize(static_cast<std::size_t>(std::max<std::streamsize>(again.gcount(), 0)));
      if (now != head) why = "its first bytes changed";
    }
    if (!why.empty())
      throw Error(ErrorCode::kIo, fmt::format("{} was truncated or rewritten while followed ({}); stopped: the lines "
                                              "above are of its earlier contents",
                                              args.path, why));
  };
  while (!g_interrupted) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = in.gcount();
    if (got > 0) {
      const bool caught_up = got < static_cast<std::streamsize>(buffer.size());
      if (caught_up && offset > 0) check_unchanged();  // before the bytes are taken as a continuation
      last_data = std::chrono::steady_clock::now();
      const std::string_view bytes(buffer.data(), static_cast<std::size_t>(got));
      if (head.size() < kHeadBytes) head += bytes.substr(0, kHeadBytes - head.size());
      offset += static_cast<std::uint64_t>(got);
      follower.feed(bytes);
      if (!caught_up) continue;  // more is waiting
    } else if (offset > 0) {
      check_unchanged();
    }
    in.clear();  // EOF is not the end while following
    if (follower.update()) report(follower.current());
    const double idle = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_data).count();
    if (idle >= args.idle_timeout_s) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(args.poll_ms));
  }
  std::signal(SIGINT, previous);
  // Nothing to report is not a success (as `detect` on the same empty file is not).
  if (follower.rows() == 0)
    throw Error(ErrorCode::kParse, fmt::format("{}: no data rows arrived while following ({} s without new data)",
                                               args.path, args.idle_timeout_s));
  if (follower.flush()) report(follower.current());
  // What the reader had to do (impossible values, skipped rows, clock steps), as `detect` says it.
  if (!args.json && !follower.trace().diagnostics.warnings.empty()) {
    std::cout << "warnings:\n";
    for (const auto& w : follower.trace().diagnostics.warnings) std::cout << "  - " << w << "\n";
  }
  if (!args.plot_path.empty()) write_plot(args.plot_path, follower.trace(), follower.current());
}

void run(const DetectArgs& args) {
  // Written as a negation so NaN fails too (CLI11's PositiveNumber lets it through).
  if (!(args.idle_timeout_s > 0 && args.idle_timeout_s <= 86400))
    throw Error(ErrorCode::kInvalidArgument, "--idle-timeout must be a number of seconds in (0, 86400]");
  args.detect.validate();  // before a follow waits for data
  if (args.follow) {
    run_follow(args);
    return;
  }
  const Service service;  // detection needs no model: nothing loads
  TraceInputOptions input = args.input;
  use_sibling_host_trace(args.path, input, args.json);
  const Trace trace = load_trace(service, args.path, input);
  const Segmentation seg = service.detect(trace, args.detect);
  if (!args.plot_path.empty()) write_plot(args.plot_path, trace, seg);
  if (args.json) {
    auto j = to_json(seg);
    j["warnings"] = trace.diagnostics.warnings;  // what the reader had to do (as `info` and `predict` carry)
    if (trace.diagnostics.time_axis == TimeAxis::kAssumedInterval) j["assumed_interval_s"] = trace.diagnostics.interval_s;
    std::cout << dump_json(j, 2) << "\n";
  } else {
    print_table(trace, seg);
  }
}

}  // namespace

void add_detect_command(CLI::App& app) {
  auto args = std::make_shared<DetectArgs>();
  auto* cmd = app.add_subcommand("detect", "Find the epoch period and boundaries in a metric trace");
  cmd->add_option("TRACE", args->path, "trace file (nvidia-smi CSV, dcgmi dmon log, canonical CSV; - = stdin)")
      ->required();
  add_trace_options(cmd, args->input);
  cmd->add_flag("--json", args->json, "print one JSON object (one per change with --follow)");
  cmd->add_option("--plot", args->plot_path, "write an SVG of the channels with the boundaries marked");
  cmd->add_flag("--follow", args->follow, "read a growing file; print a line whenever the estimate changes");
  cmd->add_option("--idle-timeout", args->idle_timeout_s, "--follow: stop after this many seconds without new data")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--poll-ms", args->poll_ms, "--follow: poll interval")->check(CLI::Range(10, 60000))->capture_default_str();
  cmd->add_option("--min-confidence", args->detect.min_confidence, "report found only at or above this confidence")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--min-epochs", args->detect.min_epochs, "whole epochs needed in view")
      ->check(CLI::Range(2, 1000000))
      ->capture_default_str();
  cmd->add_option("--min-period", args->detect.min_period_s, "shortest period to consider, seconds");
  cmd->add_option("--max-period", args->detect.max_period_s, "longest period to consider, seconds");
  cmd->add_flag("--whole-trace", args->detect.whole_trace, "analyse the whole trace, not only the busy region");
  cmd->callback([args] { run(*args); });
}

}  // namespace epochcast::cli
