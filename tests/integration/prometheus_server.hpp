// A real Prometheus server (Debian's /usr/bin/prometheus) for integration tests and
// benchmarks: 127.0.0.1, a free port, a temporary data directory, stopped with the object.
#pragma once

#include <httplib.h>

#include <fstream>
#include <string>

#include "collect_process.hpp"

namespace epochcast::testing {

inline const char* prometheus_binary() {
  if (const char* env = std::getenv("EPOCHCAST_PROMETHEUS")) return env;
  return "/usr/bin/prometheus";
}
inline bool prometheus_available() { return ::access(prometheus_binary(), X_OK) == 0; }

class PrometheusServer {
 public:
  // `scrape_targets`: host:port list scraped every `scrape_interval` (e.g. "100ms").
  // `data_dir`: an existing TSDB to serve (backfilled blocks), else a fresh one under `dir`.
  PrometheusServer(const TempDir& dir, const std::vector<std::string>& scrape_targets,
                   const std::string& scrape_interval = "100ms", const std::string& data_dir = "")
      : port_(free_port()) {
    const fs::path config = dir / "prometheus.yml";
    std::ofstream yml(config);
    yml << "global:\n  scrape_interval: " << scrape_interval << "\n  scrape_timeout: " << scrape_interval
        << "\nscrape_configs:\n  - job_name: epochcast\n    static_configs:\n      - targets: [";
    for (std::size_t i = 0; i < scrape_targets.size(); ++i) yml << (i ? ", " : "") << "'" << scrape_targets[i] << "'";
    yml << "]\n";
    yml.close();
    const std::string data = data_dir.empty() ? (dir / "prometheus-data").string() : data_dir;
    process_ = std::make_unique<Process>(
        std::vector<std::string>{prometheus_binary(), "--config.file=" + config.string(),
                                 "--storage.tsdb.path=" + data, "--storage.tsdb.retention.time=10y",
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=warn"},
        EnvVars{}, dir.path());
  }
  ~PrometheusServer() {
    process_->signal(SIGTERM);
    process_->wait(20);
  }

  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string log() const { return process_->err(); }

  // Waits for /-/ready; false after timeout_s (the log says why).
  bool wait_ready(double timeout_s = 30) const {
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto res = client.Get("/-/ready"); res && res->status == 200) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

 private:
  int port_;
  std::unique_ptr<Process> process_;
};

}  // namespace epochcast::testing
