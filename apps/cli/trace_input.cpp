#include "trace_input.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/service/service.hpp"  // sibling_host_trace

namespace epochcast::cli {

void add_trace_options(CLI::App* cmd, TraceInputOptions& opts) {
  cmd->add_option("--format", opts.format, "trace format: auto (from content), nvidia-smi, dcgmi, csv")
      ->check(CLI::IsMember({"auto", "nvidia-smi", "smi", "dcgmi", "dmon", "csv", "canonical"}))
      ->capture_default_str();
  cmd->add_option("--gpu", opts.gpu, "GPU index to read when the log interleaves several (default: the busiest)")
      ->check(kNotNegative);  // -1 is "not given" inside
  cmd->add_option("--host", opts.host_path, "host CSV (timestamp,cpu_util_pct,mem_used_mib) merged onto the trace");
  cmd->add_flag("--lenient", opts.lenient, "skip malformed rows (counted and reported) instead of failing");
  cmd->add_option("--fields", opts.fields,
                  "nvidia-smi --query-gpu field list of a csv,noheader log, e.g. timestamp,index,utilization.gpu");
  cmd->add_flag("--progress", opts.progress, "show reading progress on stderr (default: only on a terminal)");
  cmd->add_option("--interval", opts.interval_s,
                  "sampling interval in seconds for logs without timestamps (dcgmi dmon; default: its -d, else 1)");
  add_prometheus_options(cmd, opts);
}

void add_prometheus_options(CLI::App* cmd, TraceInputOptions& opts) {
  auto* url = cmd->add_option("--prometheus", opts.prometheus_url,
                              "read the trace from a Prometheus server (dcgm-exporter series) instead of a file");
  cmd->add_option("--query", opts.prometheus_queries,
                  "--prometheus: PromQL selecting dcgm-exporter series; TAG=EXPR names an expression's channel")
      ->needs(url);
  cmd->add_option("--uuid", opts.prometheus_uuid, "--prometheus: every dcgm-exporter metric of this GPU UUID")
      ->needs(url);
  cmd->add_option("--start", opts.prometheus_start, "--prometheus: range start (Unix s, RFC 3339 UTC, now-15m)")
      ->needs(url);
  cmd->add_option("--end", opts.prometheus_end, "--prometheus: range end (default: now)")->needs(url);
  auto* step = cmd->add_option("--step", opts.prometheus_step, "--prometheus: resolution (1, 0.5, 100ms, 1m)")
                   ->needs(url)
                   ->capture_default_str();
  cmd->add_flag("--raw", opts.prometheus_raw,
                "--prometheus: every stored scrape at its own timestamp (selectors only; no grid to alias)")
      ->needs(url)
      ->excludes(step);
  // A trace file becomes optional when --prometheus supplies the trace.
  std::vector<CLI::Option*> positionals;
  for (CLI::Option* o : cmd->get_options())
    if (o->get_positional() && o->get_required()) {
      o->required(false);
      positionals.push_back(o);
    }
  cmd->parse_complete_callback([positionals, url] {
    std::size_t given = 0;
    for (const CLI::Option* o : positionals) given += o->count();
    if (url->count() == 0 && given == 0 && !positionals.empty())
      throw CLI::RequiredError(positionals.front()->get_name() + " (or --prometheus URL)");
    if (url->count() > 0 && given > 0)
      throw CLI::ValidationError("--prometheus", "give a trace file or --prometheus, not both");
  });
}

namespace {

// "\rreading FILE: 42% (512 MB of 1.2 GB)" on stderr, at most 4 times a second, and only once a
// read has taken half a second (small traces print nothing).
class ProgressLine {
 public:
  explicit ProgressLine(std::string path) : path_(std::move(path)), start_(Clock::now()), last_(start_) {}
  ~ProgressLine() {
    if (shown_) std::fputs("\r\033[K", stderr);
  }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  void operator()(std::uint64_t done, std::uint64_t total) {
    const auto now = Clock::now();
    if (now - start_ < std::chrono::milliseconds(500) || now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    shown_ = true;
    if (total > 0)
      fmt::print(stderr, "\rreading {}: {:3.0f}% ({:.0f} of {:.0f} MB)", path_, 100.0 * static_cast<double>(done) / static_cast<double>(total),
                 static_cast<double>(done) / 1e6, static_cast<double>(total) / 1e6);
    else
      fmt::print(stderr, "\rreading {}: {:.0f} MB", path_, static_cast<double>(done) / 1e6);
    std::fflush(stderr);
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::string path_;
  Clock::time_point start_, last_;
  bool shown_ = false;
};

}  // namespace

TraceRequest to_trace_request(const std::string& path, const TraceInputOptions& opts) {
  TraceRequest r;
  r.path = path;
  r.format = opts.format;
  if (opts.gpu >= 0) r.gpu = opts.gpu;
  r.host_path = opts.host_path;
  r.lenient = opts.lenient;
  r.interval_s = opts.interval_s;
  std::string_view rest = opts.fields;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    std::string_view f = rest.substr(0, comma);
    while (!f.empty() && f.front() == ' ') f.remove_prefix(1);
    while (!f.empty() && f.back() == ' ') f.remove_suffix(1);
    if (!f.empty()) r.fields.emplace_back(f);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  // Was dropped without a word: the error then said "pass --fields".
  if (!opts.fields.empty() && r.fields.empty())
    throw Error(ErrorCode::kInvalidArgument, fmt::format("--fields '{}' names no field", opts.fields));
  const bool show_progress = opts.progress || ::isatty(2);
  if (!opts.prometheus_url.empty()) {
    PrometheusSource& p = r.prometheus;
    p.url = opts.prometheus_url;
    p.queries = opts.prometheus_queries;
    p.uuid = opts.prometheus_uuid;
    p.start = opts.prometheus_start;
    p.end = opts.prometheus_end;
    p.step = opts.prometheus_step;
    p.raw = opts.prometheus_raw;
    if (show_progress)
      p.on_progress = [raw = p.raw](std::size_t done, std::size_t total) {
        if (total > 1)
          fmt::print(stderr, "\r{} {}/{}{}", raw ? "raw samples" : "query_range", done, total, done == total ? "\n" : "");
      };
  } else if (show_progress) {
    auto line = std::make_shared<ProgressLine>(path);
    r.progress = [line](std::uint64_t done, std::uint64_t total) { (*line)(done, total); };
  }
  return r;
}

Trace load_trace(const Service& service, const std::string& path, const TraceInputOptions& opts) {
  // The progress line (held by the request) clears itself when the request goes.
  return service.read(to_trace_request(path, opts));
}

void use_sibling_host_trace(const std::string& path, TraceInputOptions& opts, bool quiet) {
  if (!opts.host_path.empty() || !opts.prometheus_url.empty()) return;
  opts.host_path = sibling_host_trace(path);
  if (!opts.host_path.empty() && !quiet) std::cerr << fmt::format("epochcast: merging host log {}\n", opts.host_path);
}

}  // namespace epochcast::cli
