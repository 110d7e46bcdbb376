// Trace input options shared by the commands that read a trace (info, detect, predict):
// --format, --gpu, --host, --lenient, --fields, --interval.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "epochcast/service/request.hpp"
#include "epochcast/service/service.hpp"

namespace epochcast::cli {

struct TraceInputOptions {
  std::string format = "auto";  // auto | nvidia-smi | dcgmi | csv
  int gpu = -1;                 // -1: the busiest GPU
  std::string host_path;
  bool lenient = false;
  std::string fields;           // nvidia-smi field list for csv,noheader logs, comma-separated
  double interval_s = 0;        // 0: from the log (dcgmi -d) or 1 s
  bool progress = false;        // show reading progress on stderr even when it is not a terminal
  // Prometheus source (collect stage): --prometheus URL (--query PROMQL… | --uuid UUID) --start --end [--step].
  std::string prometheus_url;
  std::vector<std::string> prometheus_queries;
  std::string prometheus_uuid;
  std::string prometheus_start;
  std::string prometheus_end;
  std::string prometheus_step = "1";
  bool prometheus_raw = false;  // --raw: the stored scrapes at their own timestamps
};

// --prometheus URL (--query PROMQL… | --uuid UUID) --start T [--end T] [--step S | --raw]; add_trace_options
// calls it. Makes the command's required positional trace optional when --prometheus is given.
void add_prometheus_options(CLI::App* cmd, TraceInputOptions& opts);
// Registers the options on `cmd`, storing into `opts` (which must outlive parsing).
void add_trace_options(CLI::App* cmd, TraceInputOptions& opts);
// The service's TraceRequest for these options and `path` ("-" = stdin; unused with
// --prometheus), with a progress line on stderr on a terminal or under --progress.
// Error(kInvalidArgument) for a --fields list that names nothing or a field twice.
[[nodiscard]] TraceRequest to_trace_request(const std::string& path, const TraceInputOptions& opts);
// Reads the trace at `path` through the service (file, stdin, or the --prometheus range).
[[nodiscard]] Trace load_trace(const Service& service, const std::string& path, const TraceInputOptions& opts);
// NAME.host.csv beside NAME.smi.csv, merged when no --host (or --prometheus) was given: host
// CPU helps detection, so detect and predict read the same evidence. Says so unless quiet.
void use_sibling_host_trace(const std::string& path, TraceInputOptions& opts, bool quiet);

}  // namespace epochcast::cli
