// `collect --listen`: serves the latest samples at /metrics in the Prometheus text format with
// dcgm-exporter's metric names and labels, so an existing Prometheus can scrape the collector.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "epochcast/collect/nvml.hpp"
#include "epochcast/trace/trace.hpp"

namespace httplib {
class Server;
}
namespace epochcast::net {
class HttpFront;
}

namespace epochcast {

// The exposition text for these GPUs (one value set per GPU; NaN values are left out).
// Names come from the metric table's dcgm_name; labels gpu, UUID, device, modelName, Hostname.
[[nodiscard]] std::string render_prometheus_metrics(std::span<const GpuIdentity> gpus,
                                                    std::span<const MetricValues> values,
                                                    std::string_view hostname);

// Who may scrape: a non-loopback address needs a bearer token or `insecure`.
struct MetricsServerOptions {
  std::string token;
  bool insecure = false;
};

class MetricsServer {
 public:
  // Binds now ("HOST:PORT", ":PORT" or "PORT"; port 0 picks a free one) and serves on its own
  // thread. Error(kInvalidArgument) for a malformed address, Error(kIo) when it cannot bind.
  // A missing host is 127.0.0.1 (loopback), as the start-up line says.
  MetricsServer(const std::string& listen_address, std::vector<GpuIdentity> gpus,
                const MetricsServerOptions& options = {});
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string url() const;  // http://HOST:PORT/metrics
  // The latest values of the GPU at `slot` (position in the constructor's list).
  void update(std::size_t slot, const MetricValues& values);
  // Marks a GPU lost: its series disappear, as with dcgm-exporter.
  void remove(std::size_t slot);
  [[nodiscard]] std::string render() const;

 private:
  std::unique_ptr<httplib::Server> server_;  // routes only
  std::unique_ptr<net::HttpFront> front_;
  std::thread thread_;
  std::atomic<bool> loop_done_{false};  // set when listen_after_bind returns
  std::string host_;
  int port_ = 0;
  std::string hostname_;
  mutable std::mutex mutex_;
  std::vector<GpuIdentity> gpus_;
  std::vector<MetricValues> values_;
  std::vector<bool> present_;
};

}  // namespace epochcast
