// The front end in front of cpp-httplib's routing, for `serve` and `collect --listen`: it owns
// the listening socket and every connection, so each resource a client can hold is bounded here
// (docs/http_api.md, "Limits"). One event-loop thread reads request heads and bodies from all
// connections without tying up a worker; only a complete, checked request goes to the bounded
// queue of a fixed worker pool, which runs httplib's parser and routes over the buffered bytes.
// The pieces: front_limits.hpp (what is allowed), request_framing.hpp (where a request ends,
// what is refused), route_request.hpp (a framed request through the routes), listen_socket.hpp.
//
// cpp-httplib 0.11 (Debian 12) cannot bound these itself: its read timeout is per read (a byte
// every few seconds holds a worker for ever), it keeps every header line, it reads chunked
// bodies past set_payload_max_length, it reads an over-limit Content-Length body before the
// 413, it listens with a backlog of 5, and it leaves Nagle on (40 ms per keep-alive answer).
#pragma once

#include <memory>
#include <string>

#include "epochcast/net/front_limits.hpp"
#include "epochcast/net/listen_socket.hpp"
#include "epochcast/net/route_request.hpp"

namespace httplib {
class Server;
}

namespace epochcast::net {

class HttpFront {
 public:
  // Binds HOST:PORT now (port 0 picks one); Error(kIo) when it cannot, Error(kInvalidArgument)
  // for a non-loopback address with no token and not `insecure`. `routes` (handlers, error
  // handler, logger) must outlive this; its own listen functions are never called.
  HttpFront(httplib::Server& routes, const std::string& host, int port, FrontLimits limits);
  ~HttpFront();
  HttpFront(const HttpFront&) = delete;
  HttpFront& operator=(const HttpFront&) = delete;

  [[nodiscard]] int port() const;
  // Serves on this thread until stop(); a stop() before run() makes run() return at once.
  void run();
  // Safe from any thread; queued and in-flight requests are answered first.
  void stop();
  [[nodiscard]] bool running() const;
  // The limits in force (max_connections lowered to what RLIMIT_NOFILE allows).
  [[nodiscard]] const FrontLimits& limits() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace epochcast::net
