// libFuzzer target: raw bytes as one client's connection to `epochcast serve`'s request path,
// with no socket: HttpApi::answer_connection frames the bytes as the front's event loop does
// (net::RequestFramer: head and header caps, Content-Length and chunked bodies under the
// limit, pipelining, the 401/413/431/400 refusals and the loop's GET /healthz), then each
// complete request goes through httplib's parser and every route over the real service and a
// small model (HttpApi::answer). The event loop itself (sockets, deadlines, budgets) is the
// integration tests' (tests/integration/serve_limits_test.cpp).
//
// Findings besides sanitizer reports: an answer that is not HTTP, a server file path in an
// answer (the data directory, the model's directory), the server no longer answering
// GET /healthz with 200 (checked every kHealthEvery inputs). A hang is libFuzzer's -timeout.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "epochcast/service/service.hpp"
#include "fuzz_common.hpp"
#include "http_api.hpp"

namespace {

using epochcast::fuzz::finding;

// How often the server's health is checked between inputs (each check is one more request).
constexpr unsigned kHealthEvery = 256;

struct Server {
  epochcast::Service service;
  std::unique_ptr<epochcast::server::HttpApi> api;

  explicit Server(epochcast::ServiceConfig config) : service(std::move(config)) {
    service.load();
    epochcast::server::ServeOptions options;
    options.listen = "127.0.0.1:0";  // bound, never served: the fuzzer calls the API directly
    options.max_body_bytes = std::size_t{1} << 20;
    options.threads = 1;
    options.timeout_s = 5;
    api = std::make_unique<epochcast::server::HttpApi>(service, options);
  }
};

Server* g_server = nullptr;
std::string g_model_dir;  // the --model file's directory: never in an answer either

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  epochcast::ServiceConfig config;
  // A small model keeps each predict fast (run.sh makes one); else the default model.
  if (const char* m = std::getenv("EPOCHCAST_FUZZ_MODEL"); m && *m) {
    config.model_path = m;
    g_model_dir = std::filesystem::absolute(m).parent_path().string();
  }
  config.hide_paths = true;  // as serve
  g_server = new Server(std::move(config));  // lives for the process
  return 0;
}

// EPOCHCAST_FUZZ_SHOW=1: each answer's status lines on stderr ("fuzz_http: 200 200 404"), so a
// replay of the seeds shows that they reach the routes (tests/fuzz/ci.sh checks that).
void show(const std::string& answer) {
  static const bool on = [] {
    const char* v = std::getenv("EPOCHCAST_FUZZ_SHOW");
    return v && *v && std::string_view(v) != "0";
  }();
  if (!on) return;
  std::string statuses;
  for (std::size_t at = answer.find("HTTP/1.1 "); at != std::string::npos; at = answer.find("HTTP/1.1 ", at + 1))
    statuses += " " + answer.substr(at + 9, 3);
  std::fprintf(stderr, "fuzz_http:%s\n", statuses.empty() ? " (no answer)" : statuses.c_str());
}

// `path` in the answer and not in the request: the server's, not the client's own bytes echoed
// (an error names the method and path it got; libFuzzer learns the path from this very check).
bool leaks(std::string_view request, const std::string& answer, std::string_view path) {
  return !path.empty() && answer.find(path) != std::string::npos && request.find(path) == std::string_view::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view request(reinterpret_cast<const char*>(data), size);
  const std::string answer = g_server->api->answer_connection(request);
  show(answer);
  if (!answer.empty() && answer.rfind("HTTP/1.1 ", 0) != 0) finding("not an HTTP answer", answer.substr(0, 200));
  if (leaks(request, answer, EPOCHCAST_DATA_DIR)) finding("server path in an answer", answer.substr(0, 400));
  if (leaks(request, answer, g_model_dir)) finding("model directory in an answer", answer.substr(0, 400));
  static unsigned n = 0;
  if (++n % kHealthEvery == 0) {
    const std::string health = g_server->api->answer("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", true);
    if (health.rfind("HTTP/1.1 200", 0) != 0) finding("server stopped answering /healthz", health.substr(0, 200));
  }
  return 0;
}
