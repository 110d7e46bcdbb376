// What one server front (`serve`, `collect --listen`) allows each client and all of them
// (docs/http_api.md, "Limits"): shared by the framing, the event loop and the listen socket.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace epochcast::net {

struct FrontLimits {
  std::size_t max_body_bytes = std::size_t{256} << 20;  // decoded body; larger: 413, unread
  std::size_t max_head_bytes = std::size_t{64} << 10;   // request line + headers; larger: 431
  std::size_t max_headers = 100;                         // header lines; more: 431
  double head_timeout_s = 10;     // first byte of a request to the end of its head; then 408
  double request_timeout_s = 60;  // first byte to the end of the body; then 408
  double idle_timeout_s = 5;      // a keep-alive connection with no request; then closed
  double write_timeout_s = 60;    // writing one answer
  int threads = 4;                // requests served at once
  std::size_t max_queue = 128;    // complete requests waiting for a worker; more: 503
  std::size_t max_connections = 4096;  // open connections in all; more: 503 (and RLIMIT_NOFILE)
  std::size_t max_per_client = 256;    // open connections from one IP address; more: 503
  std::size_t max_buffered_bytes = 0;  // request bytes held in all; 0: 4 x max_body (>= 64 MiB)
  std::size_t max_requests_per_connection = 1000;  // then the answer says Connection: close
  // Non-empty: every request but GET /healthz and GET of open_paths needs
  // "Authorization: Bearer TOKEN" (else 401).
  std::string token;
  // Exact targets a GET may fetch without the token: the web page and its scripts, which carry
  // no data (the page then sends the token with each data request it makes).
  std::vector<std::string> open_paths;
  // Bind a non-loopback address without a token (else the constructor refuses).
  bool insecure = false;
  // Non-empty: GET /healthz (no body) is answered 200 with this JSON by the event loop itself,
  // never queued behind the workers' requests: a liveness probe then says whether the server is
  // alive, not how long its queue is (bench/serve_load.py measured probes waiting 3 s behind
  // predicts). Such answers do not reach the routes' request log.
  std::string healthz_body;
  // A line for each request the front refuses itself (413, 431, 408, 503, 401, 400).
  std::function<void(const std::string&)> log;
  // What the refusal bodies are: JSON {"error": {"code", "message"}} by default.
  std::string option_hint_body = "--max-body-mb";  // named in the 413 message
};

}  // namespace epochcast::net
