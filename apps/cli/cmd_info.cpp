// epochcast info TRACE: what a trace holds and what the reader had to do to read it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/core/metric.hpp"
#include "trace_input.hpp"

namespace epochcast::cli {
namespace {

struct ChannelSummary {
  std::string tag, unit;
  std::size_t missing = 0;
  double min = NAN, mean = NAN, max = NAN;
};

ChannelSummary summarize(const Channel& c) {
  ChannelSummary s{std::string(info(c.metric).tag), std::string(info(c.metric).unit)};
  double sum = 0;
  std::size_t n = 0;
  for (double v : c.values) {
    if (std::isnan(v)) {
      ++s.missing;
      continue;
    }
    s.min = n ? std::min(s.min, v) : v;
    s.max = n ? std::max(s.max, v) : v;
    sum += v;
    ++n;
  }
  if (n) s.mean = sum / static_cast<double>(n);
  return s;
}

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json gpu_json(const GpuIdentity& g) {
  return {{"index", g.index}, {"name", g.name}, {"uuid", g.uuid}};
}

nlohmann::json to_json(const Trace& t, const std::vector<ChannelSummary>& channels) {
  const auto& d = t.diagnostics;
  nlohmann::json j;
  j["source"] = t.source;
  j["format"] = t.format;
  j["gpu"] = gpu_json(t.gpu);
  j["gpus_in_source"] = nlohmann::json::array();
  for (const auto& g : t.gpus_in_source) j["gpus_in_source"].push_back(gpu_json(g));
  j["samples"] = t.size();
  j["first_timestamp"] = t.first_timestamp;
  j["start_unix_s"] = t.start_unix_s;
  j["duration_s"] = t.duration_s();
  j["median_interval_s"] = t.median_interval_s();
  j["max_interval_s"] = t.max_interval_s();
  j["gaps"] = d.gaps;
  j["rows_read"] = d.rows_read;
  j["rows_skipped"] = d.rows_skipped;
  j["skips"] = nlohmann::json::array();
  for (const auto& s : d.skips) j["skips"].push_back({{"line", s.line}, {"reason", s.reason}});
  j["truncated_last_line"] = d.truncated_last_line;
  j["repeated_timestamps"] = d.repeated_timestamps;
  j["backward_steps"] = d.backward_steps;
  j["midnight_rollovers"] = d.midnight_rollovers;
  j["impossible_values"] = d.impossible_values;
  j["channels"] = nlohmann::json::array();
  for (const auto& c : channels)
    j["channels"].push_back({{"tag", c.tag}, {"unit", c.unit}, {"missing", c.missing},
                             {"min", number_or_null(c.min)}, {"mean", number_or_null(c.mean)},
                             {"max", number_or_null(c.max)}});
  j["warnings"] = d.warnings;
  return j;
}

std::string cell(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : "-"; }

void print_table(const Trace& t, const std::vector<ChannelSummary>& channels, std::ostream& out) {
  const auto& d = t.diagnostics;
  auto row = [&](std::string_view key, const std::string& value) { out << fmt::format("{:<12} {}\n", key, value); };
  row("trace", t.source);
  row("format", t.format);
  auto gpu_label = [](const GpuIdentity& g) {
    return g.name.empty() ? std::to_string(g.index) : fmt::format("{} {}", g.index, g.name);
  };
  std::string gpu = gpu_label(t.gpu);
  if (!t.gpu.uuid.empty()) gpu += fmt::format(" ({})", t.gpu.uuid);
  row("gpu", gpu);
  if (t.gpus_in_source.size() > 1) {
    std::vector<std::string> all;
    for (const auto& g : t.gpus_in_source) all.push_back(gpu_label(g));
    row("gpus", fmt::format("{} in source: {}; reading GPU {}", t.gpus_in_source.size(), fmt::join(all, ", "),
                            t.gpu.index));
  }
  row("samples", std::to_string(t.size()));
  row("first", t.first_timestamp.empty() ? "(no timestamps)" : t.first_timestamp);
  row("duration", fmt::format("{:.3f} s", t.duration_s()));
  row("interval", fmt::format("median {:.3f} s, max {:.3f} s", t.median_interval_s(), t.max_interval_s()));
  row("gaps", fmt::format("{} (longer than 3x the median interval)", d.gaps));
  row("rows", fmt::format("{} read{}, {} skipped{}", d.rows_read,
                          t.gpus_in_source.size() > 1 ? fmt::format(" (all {} GPUs)", t.gpus_in_source.size()) : "",
                          d.rows_skipped,
                          d.truncated_last_line ? " (last line cut mid-write)" : ""));
  row("time", fmt::format("{} repeated, {} backward clock steps, {} midnight roll-overs", d.repeated_timestamps,
                          d.backward_steps, d.midnight_rollovers));
  row("impossible", fmt::format("{} value(s) outside the metric's physical limits, read as missing",
                                d.impossible_values));
  out << "\n";
  std::size_t w = 7;
  for (const auto& c : channels) w = std::max(w, c.tag.size());
  out << fmt::format("{:<{}}  {:<5}  {:>7}  {:>10}  {:>10}  {:>10}\n", "channel", w, "unit", "missing", "min", "mean",
                     "max");
  for (const auto& c : channels)
    out << fmt::format("{:<{}}  {:<5}  {:>7}  {:>10}  {:>10}  {:>10}\n", c.tag, w, c.unit, c.missing, cell(c.min),
                       cell(c.mean), cell(c.max));
  if (!d.skips.empty()) {
    out << "\nskipped rows:\n";
    for (const auto& s : d.skips) out << fmt::format("  line {}: {}\n", s.line, s.reason);
    if (d.rows_skipped > d.skips.size()) out << fmt::format("  … and {} more\n", d.rows_skipped - d.skips.size());
  }
  if (!d.warnings.empty()) {
    out << "\nwarnings:\n";
    for (const auto& wmsg : d.warnings) out << "  - " << wmsg << "\n";
  }
}

}  // namespace

void add_info_command(CLI::App& app) {
  struct Options {
    std::string path;
    TraceInputOptions input;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("info", "show what a trace holds: format, GPUs, channels, sampling, gaps, skipped rows");
  cmd->add_option("TRACE", opts->path, "trace file (nvidia-smi CSV, dcgmi dmon log, epochcast CSV; - for stdin)")
      ->required();
  add_trace_options(cmd, opts->input);
  cmd->add_flag("--json", opts->json, "print one JSON object");
  cmd->callback([opts] {
    const Trace t = load_trace(Service(), opts->path, opts->input);
    std::vector<ChannelSummary> channels;
    for (const auto& c : t.channels) channels.push_back(summarize(c));
    if (opts->json) std::cout << dump_json(to_json(t, channels), 2) << "\n";
    else print_table(t, channels, std::cout);
  });
}

}  // namespace epochcast::cli
