// Prometheus query_range answers: the JSON parser, and the whole fetch -> Trace path against an
// in-process HTTP server that answers the fuzz input; then detection on what comes back.
// First byte: bit 0 = fetch through the server (else parse only), bits 1-2 = which time/step
// parser also sees the input as text.
#include <httplib.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "epochcast/collect/prometheus.hpp"
#include "epochcast/epoch/detect.hpp"
#include "fuzz_common.hpp"

using namespace epochcast;

namespace {

struct Server {
  httplib::Server http;
  std::mutex mu;
  std::string body;
  int port = 0;
  std::thread thread;
  Server() {
    auto answer = [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu);
      res.set_content(body, "application/json");
    };
    http.Get("/api/v1/query_range", answer);
    http.Post("/api/v1/query_range", answer);
    port = http.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { http.listen_after_bind(); });  // bound: connections queue
  }
};

Server& server() {
  static Server* s = new Server();  // never destroyed: the fuzzer exits without joining
  return *s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t sel = data[0];
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string url = "http://fuzz.example:9090/api/v1/query_range";
  fuzz::run_checked(url, false, [&] { (void)parse_query_range_response(body, url); });
  if ((sel >> 1) & 1) fuzz::run_checked("", false, [&] { (void)parse_prometheus_time(body, 1764515000.0); });
  if ((sel >> 2) & 1) fuzz::run_checked("", false, [&] { (void)parse_prometheus_duration_s(body); });
  if (!(sel & 1)) return 0;
  Server& s = server();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.body.assign(body);
  }
  PrometheusQuery q;
  q.url = "http://127.0.0.1:" + std::to_string(s.port);
  q.queries = {"DCGM_FI_DEV_GPU_UTIL", "power_w=DCGM_FI_DEV_POWER_USAGE"};
  q.start_unix_s = 1764515000;
  q.end_unix_s = q.start_unix_s + 60;
  q.step_s = 0.5;
  q.timeout = std::chrono::milliseconds(5000);
  Trace t;
  bool ok = false;
  fuzz::run_checked(q.url, false, [&] {
    t = fetch_prometheus_trace(q);
    ok = true;
  });
  if (!ok) return 0;
  for (const Channel& c : t.channels) {
    if (c.values.size() != t.size()) fuzz::finding("channel length", std::string(info(c.metric).tag));
    // Impossible readings (outside the metric table's limits) are stored as NaN, as in the files.
    for (double v : c.values)
      if (!plausible(c.metric, v)) fuzz::finding("impossible value kept", std::string(info(c.metric).tag));
  }
  fuzz::run_checked("", false, [&] { (void)detect_epochs(t); });
  return 0;
}
