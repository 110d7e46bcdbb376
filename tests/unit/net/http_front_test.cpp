// The event loop and its workers with real sockets in one process: many clients at once, the
// loop's own health probe, stop() while clients are connected. Small enough to run under
// ThreadSanitizer (scripts/sanitize.sh tsan), which watches the loop/worker hand-over.
#include "epochcast/net/http_front.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace epochcast::net {
namespace {

struct Running {
  httplib::Server routes;
  std::unique_ptr<HttpFront> front;
  std::thread loop;

  explicit Running(FrontLimits limits) {
    routes.Get("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content("echo " + req.get_param_value("n"), "text/plain");
    });
    routes.Post("/size", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(std::to_string(req.body.size()), "text/plain");
    });
    front = std::make_unique<HttpFront>(routes, "127.0.0.1", 0, std::move(limits));
    loop = std::thread([this] { front->run(); });
  }
  ~Running() {
    front->stop();
    loop.join();
  }
};

TEST(HttpFront, ManyKeepAliveClientsAtOnce) {
  FrontLimits limits;
  limits.threads = 3;
  limits.max_body_bytes = 4096;
  limits.healthz_body = "{\"status\": \"ok\"}\n";
  Running server(limits);
  constexpr int kClients = 6, kRequests = 25;
  std::atomic<int> ok{0}, refused{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", server.front->port());
      c.set_keep_alive(true);
      for (int n = 0; n < kRequests; ++n) {
        const std::string want = std::to_string(i * 1000 + n);
        if (auto r = c.Get("/echo?n=" + want); r && r->status == 200 && r->body == "echo " + want) ++ok;
        if (auto r = c.Get("/healthz"); r && r->status == 200 && r->body.find("ok") != std::string::npos) ++ok;
        if (auto r = c.Post("/size", std::string(5000, 'x'), "text/plain"); r && r->status == 413) ++refused;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), 2 * kClients * kRequests);
  EXPECT_EQ(refused.load(), kClients * kRequests);
}

TEST(HttpFront, StopWhileClientsHoldConnections) {
  FrontLimits limits;
  limits.threads = 2;
  auto server = std::make_unique<Running>(limits);
  const int port = server->front->port();
  std::atomic<bool> done{false};
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&] {
      httplib::Client c("127.0.0.1", port);
      c.set_connection_timeout(1, 0);
      c.set_read_timeout(2, 0);
      while (!done) static_cast<void>(c.Get("/echo?n=1"));
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  server.reset();  // stop() and join while requests are in flight
  done = true;
  for (auto& t : clients) t.join();
  SUCCEED();
}

TEST(HttpFront, StopBeforeRunReturnsAtOnce) {
  httplib::Server routes;
  HttpFront front(routes, "127.0.0.1", 0, FrontLimits{});
  EXPECT_GT(front.port(), 0);
  front.stop();
  front.run();
  EXPECT_FALSE(front.running());
}

}  // namespace
}  // namespace epochcast::net
