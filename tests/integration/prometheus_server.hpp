// A real Prometheus server (Debian's /usr/bin/prometheus) for integration tests and
// benchmarks: 127.0.0.1, a port the server picks itself (:0, read back from its log), a
// temporary data directory, stopped with the object. Scrape targets live in a file_sd file,
// so they can be added once the collector has said which port it got.
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
  // `scrape_targets`: host:port list scraped every `scrape_interval` (e.g. "100ms"); more can
  // be set later with set_targets. `data_dir`: an existing TSDB to serve (backfilled blocks),
  // else a fresh one under `dir`.
  PrometheusServer(const TempDir& dir, const std::vector<std::string>& scrape_targets,
                   const std::string& scrape_interval = "100ms", const std::string& data_dir = "")
      : targets_file_(dir / "targets.json") {
    set_targets(scrape_targets);
    const fs::path config = dir / "prometheus.yml";
    std::ofstream yml(config);
    yml << "global:\n  scrape_interval: " << scrape_interval << "\n  scrape_timeout: " << scrape_interval
        << "\nscrape_configs:\n  - job_name: epochcast\n    file_sd_configs:\n      - files: ['"
        << targets_file_.string() << "']\n";
    yml.close();
    const std::string data = data_dir.empty() ? (dir / "prometheus-data").string() : data_dir;
    process_ = std::make_unique<Process>(
        std::vector<std::string>{prometheus_binary(), "--config.file=" + config.string(),
                                 "--storage.tsdb.path=" + data, "--storage.tsdb.retention.time=10y",
                                 "--web.listen-address=127.0.0.1:0", "--log.level=info"},
        EnvVars{}, dir.path());
  }
  ~PrometheusServer() {
    process_->signal(SIGTERM);
    process_->wait(20);
  }

  // Replaces the scrape targets (written to a temporary name and renamed: Prometheus watches
  // the file and never reads half of it).
  void set_targets(const std::vector<std::string>& targets) const {
    const fs::path tmp = targets_file_.string() + ".tmp";
    {
      std::ofstream out(tmp);
      out << "[{\"targets\": [";
      for (std::size_t i = 0; i < targets.size(); ++i) out << (i ? ", " : "") << '"' << targets[i] << '"';
      out << "]}]\n";
    }
    fs::rename(tmp, targets_file_);
  }

  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string log() const { return process_->err(); }

  // Waits for the port in the log and /-/ready; false after timeout_s (the log says why).
  bool wait_ready(double timeout_s = 30) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    if (port_ <= 0) port_ = listen_port_in(process_->err_path(), "msg=\"Listening on\" address=127.0.0.1:", timeout_s);
    if (port_ <= 0) return false;
    httplib::Client client("127.0.0.1", port_);
    client.set_connection_timeout(1);
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto res = client.Get("/-/ready"); res && res->status == 200) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // Waits until some target has been scraped successfully (health "up"); false after timeout_s.
  bool wait_target_up(double timeout_s = 30) const {
    httplib::Client client("127.0.0.1", port_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto res = client.Get("/api/v1/targets?state=active");
          res && res->status == 200 && res->body.find("\"health\":\"up\"") != std::string::npos)
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

 private:
  fs::path targets_file_;
  int port_ = -1;
  std::unique_ptr<Process> process_;
};

}  // namespace epochcast::testing
