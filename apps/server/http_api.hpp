// `epochcast serve`: the service façade over HTTP (docs/http_api.md). Routes only: each handler
// reads the upload and the query, calls the library, and answers with the same JSON objects
// the CLI prints under --json (errors as {"error": {"code", "message"}} with a 4xx/5xx status).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "epochcast/core/error.hpp"
#include "epochcast/service/service.hpp"
#include "refit_schedule.hpp"

namespace httplib {
class Server;
}
namespace epochcast::net {
class HttpFront;
}

namespace epochcast::server {

struct ServeOptions {
  std::string listen = "127.0.0.1:8080";  // HOST:PORT, :PORT or PORT; port 0 picks a free one
  std::size_t max_body_bytes = std::size_t{256} << 20;  // larger uploads: 413
  int threads = 4;                                       // requests served at once
  double timeout_s = 60;  // a whole request (head and body) must arrive in this; also per answer
  // Non-empty: requests need "Authorization: Bearer TOKEN" (GET /healthz excepted).
  std::string token;
  bool insecure = false;  // allow a non-loopback --listen without a token
  // One line per request (method, path, status, bytes, ms); empty: no log.
  std::function<void(const std::string&)> log;
  // serve --store: POST /v1/model/refit and the background schedule (refit_schedule.hpp).
  std::optional<RefitOptions> refit;
  // GET /v1/fleet: the fleet watcher's JSON (watch --listen, serve --prometheus); empty: 404.
  std::function<std::string()> fleet_json;
  // GET /metrics: the exposition text of every section, in order (the watcher's gauges, ...);
  // none: 404. A new producer of serve's metrics is one more section.
  std::vector<std::function<std::string()>> metrics;
};

// HTTP status for a library error code (400 bad request, 404 unknown GPU, 422 malformed trace...).
[[nodiscard]] int http_status(ErrorCode code);

class HttpApi {
 public:
  // Binds now; Error(kInvalidArgument) for a malformed address, Error(kIo) when it cannot bind.
  // `service` must outlive the server.
  HttpApi(const Service& service, ServeOptions options);
  ~HttpApi();
  HttpApi(const HttpApi&) = delete;
  HttpApi& operator=(const HttpApi&) = delete;

  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string url() const;  // http://HOST:PORT
  // Serves until stop(); returns when the listening loop has ended.
  void run();
  // Safe from another thread; in-flight requests finish first.
  void stop();

  // The answer bytes to one complete request (head and body, framed as the front frames it:
  // net::RequestFramer), through httplib's parser and these routes, with no socket; what the
  // front's workers do for each request. Safe from any thread, as the workers are.
  [[nodiscard]] std::string answer(std::string_view request, bool close = false) const;
  // The answers to `bytes` as one client connection whose write side then closes: the front's
  // framing, refusals and health probe, then answer() for each request (the fuzz target's path,
  // tests/fuzz/fuzz_http.cpp). Budgets shared between connections and deadlines do not apply.
  [[nodiscard]] std::string answer_connection(std::string_view bytes) const;

 private:
  void add_routes();
  void add_fleet_routes();
  const Service& service_;
  ServeOptions options_;
  std::unique_ptr<RefitSchedule> refit_;      // with a store
  std::unique_ptr<httplib::Server> server_;  // routes only: the front owns the sockets
  std::unique_ptr<net::HttpFront> front_;
  std::string host_;
  int port_ = 0;
};

}  // namespace epochcast::server
