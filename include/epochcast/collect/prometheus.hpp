// Prometheus as a metric source: query_range over dcgm-exporter series -> Trace.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "epochcast/trace/trace.hpp"

namespace epochcast {

// Prometheus refuses query_range answers above 11,000 points per series.
inline constexpr std::size_t kPrometheusMaxPoints = 11000;

struct PrometheusQuery {
  std::string url;                   // server base URL, e.g. http://127.0.0.1:9090 (a path prefix is kept)
  // PromQL queries. Series are mapped to channels by their __name__ through the metric table
  // (DCGM_FI_DEV_GPU_UTIL -> gpu_util_pct); "TAG=EXPR" names the channel of an expression
  // without __name__ ("power_w=avg_over_time(DCGM_FI_DEV_POWER_USAGE[5s])").
  std::vector<std::string> queries;
  // Instead of queries: every dcgm-exporter metric of the metric table for this GPU UUID.
  std::string uuid;
  double start_unix_s = 0;
  double end_unix_s = 0;
  double step_s = 1;
  // Read the stored samples at their own (scrape) timestamps instead of a query_range grid:
  // no step to choose, and no repeated or skipped values where scrape jitter crosses the grid.
  // Series selectors only (instant queries of SELECTOR[window], one per raw_window_s).
  bool raw_samples = false;
  double raw_window_s = 600;
  std::chrono::milliseconds timeout{30000};   // per request
  std::size_t max_points_per_request = 10000;  // kept under kPrometheusMaxPoints
  // Called after each request: (requests done, requests in all).
  std::function<void(std::size_t, std::size_t)> on_progress;
};

// Fetches the range in chunks (query_range, or raw windows) and builds one GPU's Trace (format "prometheus"; source = URL).
// When the series cover several GPUs the first (lowest gpu label) is used, the rest are listed
// in gpus_in_source and a warning says so. Errors name the URL: Error(kIo) when the server
// cannot be reached or does not answer in time, Error(kRemote) for an error status, an error
// body or malformed JSON, Error(kNotFound) when no series matched, Error(kInvalidArgument) for
// a bad range, step or URL.
[[nodiscard]] Trace fetch_prometheus_trace(const PrometheusQuery& query);

// One series of a query_range answer. NaN for "NaN"/"+Inf"/"-Inf" values.
struct PrometheusSeries {
  std::map<std::string, std::string> labels;  // including __name__ when present
  std::vector<std::pair<double, double>> points;  // (unix seconds, value)
};

// Parses a query_range response body. Error(kRemote) naming `url` for an error status,
// a non-matrix result or malformed JSON.
[[nodiscard]] std::vector<PrometheusSeries> parse_query_range_response(std::string_view body,
                                                                       const std::string& url);

// The selector `--uuid` uses: every metric-table dcgm_name for one GPU.
[[nodiscard]] std::string prometheus_selector_for_uuid(const std::string& uuid);

// Times for --start/--end: Unix seconds ("1764515000.5"), RFC 3339 UTC ("2026-11-30T15:00:00Z"),
// "now", or "now-DURATION" with s/m/h/d units ("now-15m"). Error(kInvalidArgument) otherwise.
[[nodiscard]] double parse_prometheus_time(std::string_view text, double now_unix_s);
// Durations for --step: "1", "0.5", "1s", "500ms", "1m".
[[nodiscard]] double parse_prometheus_duration_s(std::string_view text);

}  // namespace epochcast
