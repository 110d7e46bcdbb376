#include "epochcast/collect/metrics_server.hpp"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <httplib.h>

#include "epochcast/core/error.hpp"
#include "epochcast/core/listen_address.hpp"
#include "epochcast/collect/helper_thread.hpp"
#include "epochcast/net/http_front.hpp"

namespace epochcast {

namespace {

// Label values escape backslash, quote and newline (exposition format).
std::string escape_label(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// dcgm-exporter exports the energy counter as a counter, everything else as a gauge.
const char* prometheus_type(Metric m) { return m == Metric::kEnergy ? "counter" : "gauge"; }

std::string this_hostname() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof buffer - 1) != 0) return "localhost";
  return buffer;
}

}  // namespace

std::string render_prometheus_metrics(std::span<const GpuIdentity> gpus, std::span<const MetricValues> values,
                                      std::string_view hostname) {
  std::string out;
  for (const MetricInfo& row : metric_table()) {
    if (row.dcgm_name.empty() || row.host) continue;
    bool header_done = false;
    for (std::size_t g = 0; g < gpus.size() && g < values.size(); ++g) {
      const double v = values[g][static_cast<std::size_t>(row.id)];
      if (!std::isfinite(v)) continue;
      if (!header_done) {
        fmt::format_to(std::back_inserter(out), "# HELP {} {} ({}).\n# TYPE {} {}\n", row.dcgm_name, row.tag,
                       row.unit.empty() ? "no unit" : row.unit, row.dcgm_name, prometheus_type(row.id));
        header_done = true;
      }
      const GpuIdentity& gpu = gpus[g];
      fmt::format_to(std::back_inserter(out),
                     "{}{{gpu=\"{}\",UUID=\"{}\",device=\"nvidia{}\",modelName=\"{}\",Hostname=\"{}\"}} {}\n",
                     row.dcgm_name, gpu.index, escape_label(gpu.uuid), gpu.index, escape_label(gpu.name),
                     escape_label(hostname), v);
    }
  }
  return out;
}

MetricsServer::MetricsServer(const std::string& listen_address, std::vector<GpuIdentity> gpus,
                             const MetricsServerOptions& options)
    : server_(std::make_unique<httplib::Server>()),
      hostname_(this_hostname()),
      gpus_(std::move(gpus)),
      values_(gpus_.size(), empty_metric_values()),
      present_(gpus_.size(), true) {
  const ListenAddress where = parse_listen_address(listen_address, "127.0.0.1");
  host_ = where.host;
  const int port = where.port;

  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  server_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("epochcast collect: metrics at /metrics\n", "text/plain");
  });
  // The same front as `serve`: a scraper holds no worker while it sends, and slow or hostile
  // clients are bounded (no uploads here: a 64 KiB body limit).
  net::FrontLimits limits;
  limits.max_body_bytes = std::size_t{64} << 10;
  limits.threads = 2;
  limits.token = options.token;
  limits.insecure = options.insecure;
  limits.option_hint_body = "/metrics takes no upload";
  front_ = std::make_unique<net::HttpFront>(*server_, host_, port, std::move(limits));
  port_ = front_->port();
  thread_ = detail::helper_thread([this] {
    front_->run();
    loop_done_ = true;
  });
}

MetricsServer::~MetricsServer() {
  front_->stop();  // also ends a loop that has not started yet
  if (thread_.joinable()) thread_.join();
}

std::string MetricsServer::url() const {
  const std::string host = host_ == "0.0.0.0" ? "127.0.0.1" : host_;
  return fmt::format("http://{}:{}/metrics", host, port_);
}

void MetricsServer::update(std::size_t slot, const MetricValues& values) {
  std::lock_guard lock(mutex_);
  if (slot < values_.size()) values_[slot] = values;
}

void MetricsServer::remove(std::size_t slot) {
  std::lock_guard lock(mutex_);
  if (slot < present_.size()) present_[slot] = false;
}

std::string MetricsServer::render() const {
  std::vector<GpuIdentity> gpus;
  std::vector<MetricValues> values;
  {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < gpus_.size(); ++i)
      if (present_[i]) {
        gpus.push_back(gpus_[i]);
        values.push_back(values_[i]);
      }
  }
  return render_prometheus_metrics(gpus, values, hostname_);
}

}  // namespace epochcast
