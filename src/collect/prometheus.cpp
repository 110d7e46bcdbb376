#include "epochcast/collect/prometheus.hpp"
#include "epochcast/core/text.hpp"

#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <fmt/format.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "epochcast/collect/promql_endpoint.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/core/metric.hpp"
#include "epochcast/core/nan.hpp"
#include "epochcast/core/text.hpp"
#include "epochcast/trace/read.hpp"

namespace epochcast {

namespace {

double parse_number(std::string_view text, bool& ok) {
  double v = 0;
  ok = text::parse_decimal(text, v);  // the one number parser (core/text)
  return v;
}

double parse_value(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) throw Error(ErrorCode::kRemote, "sample value is neither a string nor a number");
  const auto& s = v.get_ref<const std::string&>();
  bool ok = false;
  const double d = parse_number(s, ok);
  return ok && std::isfinite(d) ? d : kNaN;  // "NaN", "+Inf", "-Inf", "" -> missing
}

// "tag=EXPR" names the channel; a plain PromQL expression has none. An '=' inside the
// expression (label matchers) is not a tag prefix: the tag must be a canonical metric tag.
std::pair<std::optional<Metric>, std::string> split_named_query(const std::string& q) {
  const auto eq = q.find('=');
  if (eq != std::string::npos && eq > 0)
    if (auto m = metric_by_tag(q.substr(0, eq))) return {m, q.substr(eq + 1)};
  return {std::nullopt, q};
}

std::string gpu_key(const std::map<std::string, std::string>& labels) {
  auto get = [&](const char* k) {
    const auto it = labels.find(k);
    return it == labels.end() ? std::string() : it->second;
  };
  return get("Hostname") + "\x1f" + get("gpu") + "\x1f" + get("UUID");
}

int gpu_index_of(const std::map<std::string, std::string>& labels) {
  const auto it = labels.find("gpu");
  if (it == labels.end()) return -1;
  int v = -1;
  std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  return v;
}

std::string label(const std::map<std::string, std::string>& labels, const char* key) {
  const auto it = labels.find(key);
  return it == labels.end() ? std::string() : it->second;
}

}  // namespace

std::vector<PrometheusSeries> parse_query_range_response(std::string_view body, const std::string& url) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kRemote, fmt::format("Prometheus {} returned malformed JSON ({}); first bytes: '{}'", url,
                                                e.what(), text::printable(body, 80)));
  }
  try {
    if (!doc.is_object() || !doc.contains("status"))
      throw Error(ErrorCode::kRemote, fmt::format("Prometheus {} answered JSON without a status", url));
    if (doc.at("status") != "success")
      throw Error(ErrorCode::kRemote, fmt::format("Prometheus {} answered {} ({}): {}", url, doc.at("status").dump(),
                                                  doc.value("errorType", std::string("no errorType")),
                                                  doc.value("error", std::string("no error text"))));
    const auto& data = doc.at("data");
    if (data.at("resultType") != "matrix")
      throw Error(ErrorCode::kRemote, fmt::format("Prometheus {} answered a {} result, expected a matrix (range query)",
                                                  url, data.at("resultType").dump()));
    std::vector<PrometheusSeries> out;
    for (const auto& s : data.at("result")) {
      PrometheusSeries series;
      for (const auto& [k, v] : s.at("metric").items()) series.labels[k] = v.get<std::string>();
      const auto& values = s.at("values");
      series.points.reserve(values.size());
      for (const auto& p : values) {
        if (!p.is_array() || p.size() != 2) throw Error(ErrorCode::kRemote, "a sample is not a [time, value] pair");
        series.points.emplace_back(p[0].get<double>(), parse_value(p[1]));
      }
      out.push_back(std::move(series));
    }
    return out;
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kRemote && e.detail().find(url) != std::string::npos) throw;
    throw Error(ErrorCode::kRemote, fmt::format("Prometheus {} returned an unexpected answer: {}", url, e.what()));
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kRemote, fmt::format("Prometheus {} returned an unexpected answer: {}", url, e.what()));
  }
}

std::string prometheus_selector_for_uuid(const std::string& uuid) {
  std::string names;
  for (const MetricInfo& row : metric_table())
    if (!row.dcgm_name.empty() && !row.host) names += (names.empty() ? "" : "|") + std::string(row.dcgm_name);
  std::string escaped;
  for (char c : uuid) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return fmt::format("{{__name__=~\"{}\",UUID=\"{}\"}}", names, escaped);
}

double parse_prometheus_duration_s(std::string_view text) {
  std::size_t unit_at = text.size();
  while (unit_at > 0 && std::isalpha(static_cast<unsigned char>(text[unit_at - 1]))) --unit_at;
  bool ok = false;
  const double v = parse_number(text.substr(0, unit_at), ok);
  const std::string_view unit = text.substr(unit_at);
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1;
  else if (unit == "ms") scale = 1e-3;
  else if (unit == "m") scale = 60;
  else if (unit == "h") scale = 3600;
  else if (unit == "d") scale = 86400;
  if (!ok || scale == 0 || !std::isfinite(v) || v < 0)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("duration '{}': expected a number with an optional unit ms, s, m, h or d", text));
  return v * scale;
}

double parse_prometheus_time(std::string_view text, double now_unix_s) {
  if (text == "now") return now_unix_s;
  if (text.starts_with("now-")) return now_unix_s - parse_prometheus_duration_s(text.substr(4));
  bool ok = false;
  if (const double v = parse_number(text, ok); ok && std::isfinite(v)) return v;
  // RFC 3339 in UTC: YYYY-MM-DDTHH:MM:SS[.fff]Z
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, consumed = 0;
  const std::string s(text);
  double seconds = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%lf%n", &year, &month, &day, &hour, &minute, &seconds, &consumed) == 6 &&
      static_cast<std::size_t>(consumed) + 1 == s.size() && (s.back() == 'Z' || s.back() == 'z')) {
    // A real calendar day and clock (timegm rolled 2026-13-01 on into 2027 silently).
    const std::chrono::year_month_day ymd{std::chrono::year{year}, std::chrono::month{static_cast<unsigned>(month)},
                                          std::chrono::day{static_cast<unsigned>(day)}};
    if (ymd.ok() && hour >= 0 && hour <= 23 && minute >= 0 && minute <= 59 && seconds >= 0 && seconds < 61)
      return static_cast<double>(text::days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) *
                                     86400 +
                                 hour * 3600 + minute * 60) +
             seconds;
  }
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("time '{}': expected Unix seconds, RFC 3339 UTC (2026-11-30T15:00:00Z), now or now-15m", text));
}

Trace fetch_prometheus_trace(const PrometheusQuery& q) {
  if (q.queries.empty() && q.uuid.empty())
    throw Error(ErrorCode::kInvalidArgument, "Prometheus source: give --query PROMQL or --uuid GPU-UUID");
  if (!(q.step_s > 0) || !std::isfinite(q.start_unix_s) || !std::isfinite(q.end_unix_s) || q.end_unix_s <= q.start_unix_s)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Prometheus range: need start < end and step > 0 (start {}, end {}, step {})",
                            q.start_unix_s, q.end_unix_s, q.step_s));
  const PromqlEndpoint server = parse_promql_endpoint(q.url);
  const std::size_t chunk_points = std::clamp<std::size_t>(q.max_points_per_request, 2, kPrometheusMaxPoints - 1);
  // Every point is held in memory: refuse ranges no trace needs (a year at 1 s is 31.5 M).
  // Raw mode cannot know the scrape interval before it asks; it counts what comes back.
  constexpr double kMaxRangePoints = 50e6;
  const double range_points = (q.end_unix_s - q.start_unix_s) / q.step_s;
  if (!q.raw_samples && !(range_points <= kMaxRangePoints))
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Prometheus range: {:.3g} points per series at step {} s is more than {:.0f} M; use a larger --step",
                            range_points, q.step_s, kMaxRangePoints / 1e6));
  const auto total_points =
      q.raw_samples ? std::size_t{0} : static_cast<std::size_t>(std::floor(range_points + 1e-9)) + 1;
  // Raw mode: one instant query of SELECTOR[window] per window (Prometheus returns the stored
  // samples with their own timestamps); whole seconds, as PromQL durations want them.
  const double window_s = std::max(1.0, std::ceil(q.raw_window_s));
  const std::size_t chunks =
      q.raw_samples ? static_cast<std::size_t>(std::ceil((q.end_unix_s - q.start_unix_s) / window_s))
                    : (total_points + chunk_points - 1) / chunk_points;

  std::vector<std::pair<std::optional<Metric>, std::string>> queries;
  if (!q.uuid.empty()) queries.emplace_back(std::nullopt, prometheus_selector_for_uuid(q.uuid));
  for (const auto& text : q.queries) queries.push_back(split_named_query(text));
  if (q.raw_samples)
    for (const auto& [named, expr] : queries)
      if (named)
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("Prometheus raw samples: '{}' names an expression; raw reads take series selectors "
                                "only (drop --raw and give --step for expressions)",
                                expr));

  httplib::Client client(server.scheme_host_port);
  const auto timeout_s = std::chrono::duration_cast<std::chrono::seconds>(q.timeout).count();
  const auto timeout_us = std::chrono::duration_cast<std::chrono::microseconds>(q.timeout).count() % 1000000;
  client.set_connection_timeout(timeout_s, timeout_us);
  client.set_read_timeout(timeout_s, timeout_us);
  if (!server.user.empty()) client.set_basic_auth(server.user, server.password);
  const std::string endpoint = server.path_prefix + (q.raw_samples ? "/api/v1/query" : "/api/v1/query_range");

  // (gpu key) -> (metric -> values on the grid, or raw (milliseconds, value) samples);
  // identities from the labels.
  struct GpuSeries {
    GpuIdentity identity;
    std::map<Metric, std::vector<double>> channels;
    std::map<Metric, std::vector<std::pair<std::int64_t, double>>> raw;
  };
  std::map<std::string, GpuSeries> by_gpu;
  std::vector<std::string> warnings;
  std::size_t requests_done = 0;
  std::size_t raw_points = 0;
  const std::size_t requests_total = chunks * queries.size();
  const auto start_ms = static_cast<std::int64_t>(std::ceil(q.start_unix_s * 1000 - 1e-6));
  const auto end_ms = static_cast<std::int64_t>(std::floor(q.end_unix_s * 1000 + 1e-6));

  for (const auto& [named, expr] : queries) {
    for (std::size_t c = 0; c < chunks; ++c) {
      httplib::Params params;
      if (q.raw_samples) {
        // Windows end at start + (c+1)·W; a sample on a border may come back twice (Prometheus 2
        // selects [t−W, t]), and duplicates collapse below.
        const double at = std::min(q.end_unix_s, q.start_unix_s + static_cast<double>(c + 1) * window_s);
        // PromQL takes a range only after a selector: "(sel)[W]" would be a subquery.
        params = {{"query", fmt::format("{}[{:.0f}s]", expr, window_s)}, {"time", fmt::format("{:.3f}", at)}};
      } else {
        const double chunk_start = q.start_unix_s + static_cast<double>(c * chunk_points) * q.step_s;
        const double chunk_end = std::min(q.end_unix_s, chunk_start + static_cast<double>(chunk_points - 1) * q.step_s);
        params = {{"query", expr},
                  {"start", fmt::format("{:.3f}", chunk_start)},
                  {"end", fmt::format("{:.3f}", chunk_end)},
                  {"step", fmt::format("{}", q.step_s)}};
      }
      const std::string where = server.display_url + endpoint.substr(server.path_prefix.size());
      auto res = client.Get(endpoint, params, httplib::Headers{});
      if (!res) throw promql_transport_error("Prometheus " + where, res.error(), q.timeout.count() / 1000.0);
      if (res->status != 200) {
        std::string detail = promql_refusal_detail(res->status, res->body);
        if (q.raw_samples) detail += " (raw reads take series selectors only; for an expression give --step)";
        throw Error(ErrorCode::kRemote, fmt::format("Prometheus {} refused query '{}': {}", where, expr, detail));
      }
      for (auto& series : parse_query_range_response(res->body, where)) {
        std::optional<Metric> metric = named;
        if (!metric) {
          const std::string name = label(series.labels, "__name__");
          if (name.empty())
            throw Error(ErrorCode::kUnsupported,
                        fmt::format("Prometheus {}: query '{}' returns series without a metric name; name the "
                                    "channel: TAG=EXPR (e.g. power_w={})",
                                    where, expr, expr));
          metric = metric_by_dcgm_name(name);
          if (!metric) metric = metric_by_tag(name);
          if (!metric) {
            const std::string w = fmt::format("series {} is not in the metric table; ignored", name);
            if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
            continue;
          }
        }
        GpuSeries& gpu = by_gpu[gpu_key(series.labels)];
        if (gpu.identity.index < 0 && gpu.identity.uuid.empty()) {
          gpu.identity.index = gpu_index_of(series.labels);
          gpu.identity.uuid = label(series.labels, "UUID");
          gpu.identity.name = label(series.labels, "modelName");
        }
        if (q.raw_samples) {
          auto& samples = gpu.raw[*metric];
          for (const auto& [t, v] : series.points) {
            if (!std::isfinite(t)) continue;
            const auto ms = static_cast<std::int64_t>(std::llround(t * 1000));  // Prometheus stores milliseconds
            if (ms >= start_ms && ms <= end_ms) samples.emplace_back(ms, v);
          }
          raw_points += series.points.size();
          if (static_cast<double>(raw_points) > kMaxRangePoints * 6)
            throw Error(ErrorCode::kInvalidArgument,
                        fmt::format("Prometheus {}: more than {:.0f} M raw samples in the range; shorten it or give "
                                    "--step to read a grid",
                                    where, kMaxRangePoints * 6 / 1e6));
          continue;
        }
        auto& values = gpu.channels[*metric];
        if (values.empty()) values.assign(total_points, kNaN);
        for (const auto& [t, v] : series.points) {
          const double k = std::round((t - q.start_unix_s) / q.step_s);
          if (k >= 0 && k < static_cast<double>(total_points)) values[static_cast<std::size_t>(k)] = v;
        }
      }
      ++requests_done;
      if (q.on_progress) q.on_progress(requests_done, requests_total);
    }
  }
  if (by_gpu.empty())
    throw Error(ErrorCode::kNotFound, fmt::format("Prometheus {}: no series matched {} between {} and {}", server.display_url,
                                                  q.uuid.empty() ? fmt::format("'{}'", fmt::join(q.queries, "', '"))
                                                                 : "UUID " + q.uuid,
                                                  q.start_unix_s, q.end_unix_s));

  // The GPU with the lowest index (then the first key) is the trace's GPU.
  auto chosen = by_gpu.begin();
  for (auto it = by_gpu.begin(); it != by_gpu.end(); ++it)
    if (it->second.identity.index >= 0 &&
        (chosen->second.identity.index < 0 || it->second.identity.index < chosen->second.identity.index))
      chosen = it;

  Trace trace;
  trace.source = server.display_url;
  trace.format = "prometheus";
  trace.gpu = chosen->second.identity;
  for (const auto& [key, g] : by_gpu) trace.gpus_in_source.push_back(g.identity);
  if (by_gpu.size() > 1)
    warnings.push_back(fmt::format("the series cover {} GPUs; using gpu={} UUID={} (narrow with --uuid)", by_gpu.size(),
                                   trace.gpu.index, trace.gpu.uuid));

  // Sample times (ms from the epoch) and, per channel, the value at each: the grid points where
  // at least one channel has a value, or the union of the raw samples' timestamps (the metrics
  // of one scrape share its timestamp).
  std::vector<std::int64_t> times_ms;
  std::map<Metric, std::vector<double>> columns;
  if (q.raw_samples) {
    for (auto& [m, samples] : chosen->second.raw) {
      std::sort(samples.begin(), samples.end());
      samples.erase(std::unique(samples.begin(), samples.end(),
                                [](const auto& a, const auto& b) { return a.first == b.first; }),
                    samples.end());
      for (const auto& [ms, v] : samples) times_ms.push_back(ms);
    }
    std::sort(times_ms.begin(), times_ms.end());
    times_ms.erase(std::unique(times_ms.begin(), times_ms.end()), times_ms.end());
    for (const auto& [m, samples] : chosen->second.raw) {
      auto& col = columns[m];
      col.assign(times_ms.size(), kNaN);
      std::size_t i = 0;
      for (const auto& [ms, v] : samples) {
        while (times_ms[i] < ms) ++i;
        col[i] = v;
      }
    }
    // A sample whose every value is NaN carries nothing.
    std::vector<std::size_t> keep;
    for (std::size_t i = 0; i < times_ms.size(); ++i)
      for (const auto& [m, col] : columns)
        if (!std::isnan(col[i])) {
          keep.push_back(i);
          break;
        }
    std::vector<std::int64_t> kept_ms;
    for (std::size_t i : keep) kept_ms.push_back(times_ms[i]);
    for (auto& [m, col] : columns) {
      std::vector<double> kept_col;
      for (std::size_t i : keep) kept_col.push_back(col[i]);
      col = std::move(kept_col);
    }
    times_ms = std::move(kept_ms);
  } else {
    std::vector<std::size_t> kept;
    for (std::size_t k = 0; k < total_points; ++k)
      for (const auto& [m, values] : chosen->second.channels)
        if (!std::isnan(values[k])) {
          kept.push_back(k);
          break;
        }
    // Grid times relative to the first kept point are exact multiples of the step.
    for (std::size_t k : kept) times_ms.push_back(static_cast<std::int64_t>(k));
    for (const auto& [m, values] : chosen->second.channels) {
      auto& col = columns[m];
      for (std::size_t k : kept) col.push_back(values[k]);
    }
  }
  if (times_ms.empty())
    throw Error(ErrorCode::kNotFound, fmt::format("Prometheus {}: the matched series hold only NaN in the range", server.display_url));
  const double first_s = q.raw_samples ? static_cast<double>(times_ms.front()) / 1000
                                       : q.start_unix_s + static_cast<double>(times_ms.front()) * q.step_s;
  trace.start_unix_s = first_s;
  trace.first_timestamp = format_iso8601_utc(first_s);
  trace.time_s.reserve(times_ms.size());
  for (std::int64_t t : times_ms)
    trace.time_s.push_back(q.raw_samples ? static_cast<double>(t - times_ms.front()) / 1000
                                         : static_cast<double>(t - times_ms.front()) * q.step_s);
  for (const auto& [m, values] : columns) {
    Channel& ch = trace.channel(m);
    for (std::size_t i = 0; i < values.size(); ++i) ch.values[i] = values[i];
  }
  // A reading outside the metric's physical limits (util 250 %, negative power) is missing.
  ImpossibleValues impossible;
  for (Channel& ch : trace.channels)
    for (std::size_t i = 0; i < ch.values.size(); ++i)
      if (!plausible(ch.metric, ch.values[i])) {
        impossible.record(ch.metric, ch.values[i], {},
                          fmt::format("sample {} ({})", i + 1, format_iso8601_utc(first_s + trace.time_s[i])));
        ch.values[i] = kNaN;
      }
  // Channels in metric-table order, as the other readers give them.
  std::sort(trace.channels.begin(), trace.channels.end(),
            [](const Channel& a, const Channel& b) { return a.metric < b.metric; });
  trace.diagnostics.rows_read = times_ms.size();
  if (q.raw_samples) {
    // A gap: more than 3x the median interval between samples, as `info` counts it.
    std::vector<double> dt;
    for (std::size_t i = 1; i < trace.time_s.size(); ++i) dt.push_back(trace.time_s[i] - trace.time_s[i - 1]);
    if (!dt.empty()) {
      std::vector<double> sorted = dt;
      std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
      const double median = sorted[sorted.size() / 2];
      for (double d : dt)
        if (d > 3 * median) ++trace.diagnostics.gaps;
    }
  } else {
    for (std::size_t i = 1; i < times_ms.size(); ++i)
      if (times_ms[i] - times_ms[i - 1] > 3) ++trace.diagnostics.gaps;
  }
  trace.diagnostics.warnings = std::move(warnings);
  impossible.report(server.display_url, trace);
  return trace;
}

}  // namespace epochcast
