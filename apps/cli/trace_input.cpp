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
#include "epochcast/collect/prometheus.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/service/service.hpp"  // sibling_host_trace

namespace epochcast::cli {

void add_trace_options(CLI::App* cmd, TraceInputOptions& opts) {
  cmd->add_option("--format", opts.format,
                  "trace format: auto (from content), nvidia-smi, nvidia-smi-dmon, dcgmi, prometheus-text, dcgm-csv, "
                  "grafana-csv, query-range-json, wandb, mlflow, csv")
      ->check(CLI::IsMember({"auto", "nvidia-smi", "smi", "dcgmi", "dmon", "csv", "canonical", "nvidia-smi-dmon",
                             "smi-dmon", "prometheus-text", "metrics", "dcgm-csv", "grafana-csv", "grafana",
                             "query-range-json", "json", "wandb", "mlflow"}))
      ->capture_default_str();
  cmd->add_option("--gpu", opts.gpu, "GPU index to read when the log interleaves several (default: the busiest)")
      ->check(kNotNegative);  // -1 is "not given" inside
  cmd->add_option("--host", opts.host_path, "host CSV (timestamp,cpu_util_pct,mem_used_mib) merged onto the trace");
  cmd->add_flag("--lenient", opts.lenient, "skip malformed rows (counted and reported) instead of failing");
  cmd->add_option("--fields", opts.fields,
                  "nvidia-smi --query-gpu field list of a csv,noheader log, e.g. timestamp,index,utilization.gpu");
  cmd->add_flag("--progress", opts.progress, "show reading progress on stderr (default: only on a terminal)");
  cmd->add_option("--interval", opts.interval_s,
                  "sampling interval in seconds for logs without timestamps (dcgmi or nvidia-smi dmon, appended scrapes); "
                  "without it (or a dcgmi -d comment) predict refuses such a log");
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

ReadOptions to_read_options(const TraceInputOptions& opts) {
  ReadOptions r;
  const auto format = trace_format_from_string(opts.format);
  if (!format) throw Error(ErrorCode::kInvalidArgument, fmt::format("unknown --format '{}'", opts.format));
  r.format = *format;
  if (opts.gpu >= 0) r.gpu = opts.gpu;
  r.host_path = opts.host_path;
  r.lenient = opts.lenient;
  // 0 is "not given"; below 1 ms (the collector's finest) a time axis of 1e-300 s steps is nonsense.
  if (!(opts.interval_s == 0 || (opts.interval_s >= 1e-3 && opts.interval_s <= 86400)))
    throw Error(ErrorCode::kInvalidArgument, "--interval must be a number of seconds from 0.001 to 86400");
  if (opts.interval_s > 0) r.interval_s = opts.interval_s;
  std::string_view rest = opts.fields;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    std::string_view f = rest.substr(0, comma);
    while (!f.empty() && f.front() == ' ') f.remove_prefix(1);
    while (!f.empty() && f.back() == ' ') f.remove_suffix(1);
    if (!f.empty()) {
      if (std::find(r.smi_fields.begin(), r.smi_fields.end(), f) != r.smi_fields.end())
        throw Error(ErrorCode::kInvalidArgument, fmt::format("--fields lists '{}' twice", f));
      r.smi_fields.emplace_back(f);
    }
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  // Was dropped without a word: the error then said "pass --fields".
  if (!opts.fields.empty() && r.smi_fields.empty())
    throw Error(ErrorCode::kInvalidArgument, fmt::format("--fields '{}' names no field", opts.fields));
  if (!r.smi_fields.empty() && r.format != TraceFormat::kAuto && r.format != TraceFormat::kNvidiaSmi)
    throw Error(ErrorCode::kInvalidArgument, "--fields describes an nvidia-smi csv,noheader log, not --format " + opts.format);
  if (!r.smi_fields.empty() && r.format == TraceFormat::kAuto) r.format = TraceFormat::kNvidiaSmi;
  return r;
}

Trace load_prometheus_trace(const TraceInputOptions& opts) {
  if (opts.prometheus_start.empty())
    throw Error(ErrorCode::kInvalidArgument, "--prometheus needs --start (Unix s, RFC 3339 UTC or now-15m)");
  const double now_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  PrometheusQuery q;
  q.url = opts.prometheus_url;
  q.queries = opts.prometheus_queries;
  q.uuid = opts.prometheus_uuid;
  q.start_unix_s = parse_prometheus_time(opts.prometheus_start, now_s);
  q.end_unix_s = opts.prometheus_end.empty() ? now_s : parse_prometheus_time(opts.prometheus_end, now_s);
  q.step_s = parse_prometheus_duration_s(opts.prometheus_step);
  q.raw_samples = opts.prometheus_raw;
  if (opts.progress || ::isatty(2))
    q.on_progress = [raw = q.raw_samples](std::size_t done, std::size_t total) {
      if (total > 1)
        fmt::print(stderr, "\r{} {}/{}{}", raw ? "raw samples" : "query_range", done, total, done == total ? "\n" : "");
    };
  return fetch_prometheus_trace(q);
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

Trace load_trace(const std::string& path, const TraceInputOptions& opts) {
  if (!opts.prometheus_url.empty()) return load_prometheus_trace(opts);
  ReadOptions read = to_read_options(opts);
  std::unique_ptr<ProgressLine> progress;
  if (opts.progress || ::isatty(2)) {
    progress = std::make_unique<ProgressLine>(path);
    read.progress = [p = progress.get()](std::uint64_t done, std::uint64_t total) { (*p)(done, total); };
  }
  return read_trace(path, read);
}

void use_sibling_host_trace(const std::string& path, TraceInputOptions& opts, bool quiet) {
  if (!opts.host_path.empty() || !opts.prometheus_url.empty()) return;
  opts.host_path = sibling_host_trace(path);
  if (!opts.host_path.empty() && !quiet) std::cerr << fmt::format("epochcast: merging host log {}\n", opts.host_path);
}

}  // namespace epochcast::cli
