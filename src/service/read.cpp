// Service::read: a trace from a file, stdin, an upload or a Prometheus range.
#include <fmt/format.h>

#include <chrono>

#include "epochcast/collect/prometheus.hpp"
#include "epochcast/service/service.hpp"
#include "service_impl.hpp"

namespace epochcast {

ReadOptions to_read_options(const TraceRequest& request) {
  request.validate();
  ReadOptions r;
  r.format = *trace_format_from_string(request.format);
  r.gpu = request.gpu;
  r.host_path = request.host_path;
  r.lenient = request.lenient;
  if (request.interval_s > 0) r.interval_s = request.interval_s;
  r.smi_fields = request.fields;
  // A field list says what the log is.
  if (!r.smi_fields.empty() && r.format == TraceFormat::kAuto) r.format = TraceFormat::kNvidiaSmi;
  r.progress = request.progress;
  return r;
}

namespace {

Trace fetch(const PrometheusSource& source) {
  const double now_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  PrometheusQuery q;
  q.url = source.url;
  q.queries = source.queries;
  q.uuid = source.uuid;
  q.start_unix_s = parse_prometheus_time(source.start, now_s);
  q.end_unix_s = source.end.empty() ? now_s : parse_prometheus_time(source.end, now_s);
  q.step_s = parse_prometheus_duration_s(source.step);
  q.raw_samples = source.raw;
  q.on_progress = source.on_progress;
  return fetch_prometheus_trace(q);
}

}  // namespace

Trace Service::read(const TraceRequest& request) const {
  request.validate();
  if (!request.prometheus.url.empty()) return fetch(request.prometheus);
  return read_trace(request.path, to_read_options(request));
}

Trace Service::read(std::string_view bytes, const std::string& name, const TraceRequest& request,
                    std::optional<std::string_view> host, const std::string& host_name) const {
  ReadOptions options = to_read_options(request);
  options.host_path.clear();  // the host log comes as bytes too
  Trace trace = read_trace_from_string(bytes, name, options);
  if (host) merge_host_trace(trace, read_host_trace_from_string(*host, host_name));
  return trace;
}

}  // namespace epochcast
