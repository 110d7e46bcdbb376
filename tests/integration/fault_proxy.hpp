// A misbehaving PromQL endpoint on loopback: forwards to a real Prometheus, or answers as a
// broken one would (an error status, garbled or cut JSON, NaN values, too slow, gone).
#pragma once

#include <httplib.h>

#include <atomic>
#include <regex>
#include <string>
#include <thread>

namespace epochcast::testing {

enum class Fault { kNone, kStatus500, kGarbled, kPartial, kNaN, kSlow, kRefused };

class FaultProxy {
 public:
  explicit FaultProxy(const std::string& upstream_host, int upstream_port)
      : host_(upstream_host), port_up_(upstream_port) {
    server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) { handle(req, res); });
    server_.Get(".*", [this](const httplib::Request& req, httplib::Response& res) { handle(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // Bound and listening already: connections wait in the backlog until the loop accepts them.
  }
  ~FaultProxy() {
    server_.stop();
    thread_.join();
  }
  void set(Fault f) { fault_ = f; }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] int requests() const { return requests_; }

 private:
  void handle(const httplib::Request& req, httplib::Response& res) {
    ++requests_;
    const Fault f = fault_;
    if (f == Fault::kStatus500) {
      res.status = 500;
      res.set_content("{\"status\":\"error\",\"errorType\":\"internal\",\"error\":\"injected\"}", "application/json");
      return;
    }
    if (f == Fault::kSlow) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    if (f == Fault::kRefused) {
      // A dropped connection: no answer at all.
      res.status = 503;
      res.set_content("<html>upstream gone</html>", "text/html");
      return;
    }
    httplib::Client up(host_, port_up_);
    httplib::Result r = req.method == "POST"
                            ? up.Post(req.path, req.body, req.get_header_value("Content-Type").c_str())
                            : up.Get(req.path + "?" + httplib::detail::params_to_query_str(req.params));
    if (!r) {
      res.status = 502;
      return;
    }
    std::string body = r->body;
    if (f == Fault::kGarbled) body = "<html><body>Bad Gateway</body></html>";
    if (f == Fault::kPartial) body = body.substr(0, body.size() / 2);
    if (f == Fault::kNaN) body = std::regex_replace(body, std::regex(R"(,"[-0-9.e+]+"\])"), R"(,"NaN"])");
    res.status = r->status;
    res.set_content(body, "application/json");
  }

  std::string host_;
  int port_up_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<Fault> fault_{Fault::kNone};
  std::atomic<int> requests_{0};
};

}  // namespace epochcast::testing
