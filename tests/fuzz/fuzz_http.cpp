// libFuzzer target: raw bytes as one client's connection to `epochcast serve`'s request path.
// A real server (HttpApi: the epoll front with its limits, httplib's parser, every route over
// the real service and default model) runs in this process on 127.0.0.1; each input is sent
// on a fresh connection, the write side closed, and every answer read to the end.
//
// Findings besides sanitizer reports: no end of the answer within kAnswerDeadlineS (a hang or
// a held connection), an answer that is not HTTP, a server file path in an answer, the server
// no longer answering GET /healthz.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "epochcast/service/service.hpp"
#include "fuzz_common.hpp"
#include "http_api.hpp"

namespace {

using epochcast::fuzz::finding;

// An input is at most libFuzzer's -max_len; the server answers it in milliseconds. Far beyond
// that means the connection is held (the front's own deadlines are 10 s and more).
constexpr double kAnswerDeadlineS = 8;

struct Server {
  epochcast::Service service;
  std::unique_ptr<epochcast::server::HttpApi> api;
  std::thread loop;
  int port = 0;

  explicit Server(epochcast::ServiceConfig config) : service(std::move(config)) {
    service.load();
    epochcast::server::ServeOptions options;
    options.listen = "127.0.0.1:0";
    options.max_body_bytes = std::size_t{1} << 20;
    options.threads = 2;
    options.timeout_s = 5;
    api = std::make_unique<epochcast::server::HttpApi>(service, options);
    port = api->port();
    loop = std::thread([this] { api->run(); });
  }
};

Server* g_server = nullptr;

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) finding("connect", "server gone");
  return fd;
}

// Sends `bytes`, closes the write side, reads to EOF; finding on a hang.
std::string exchange(std::string_view bytes) {
  const int fd = connect_to(g_server->port);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kAnswerDeadlineS);
  std::size_t sent = 0;
  std::string answer;
  char buffer[65536];
  bool write_open = true;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) finding("hang", "no end of the answer within the deadline");
    if (write_open && sent == bytes.size()) {
      ::shutdown(fd, SHUT_WR);
      write_open = false;
    }
    pollfd p{fd, static_cast<short>(POLLIN | (write_open ? POLLOUT : 0)), 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    if (write_open && (p.revents & POLLOUT)) {
      const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<std::size_t>(n);
      else write_open = false;  // refused early and closed: the answer is what matters
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      answer.append(buffer, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return answer;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  epochcast::ServiceConfig config;
  // A small model keeps each predict fast (run.sh makes one); else the default model.
  if (const char* m = std::getenv("EPOCHCAST_FUZZ_MODEL"); m && *m) config.model_path = m;
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string answer = exchange(std::string_view(reinterpret_cast<const char*>(data), size));
  show(answer);
  if (!answer.empty() && answer.rfind("HTTP/1.1 ", 0) != 0) finding("not an HTTP answer", answer.substr(0, 200));
  if (answer.find(EPOCHCAST_DATA_DIR) != std::string::npos) finding("server path in an answer", answer.substr(0, 400));
  static unsigned n = 0;
  if (++n % 256 == 0) {
    const std::string health = exchange("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    if (health.rfind("HTTP/1.1 200", 0) != 0) finding("server stopped answering /healthz", health.substr(0, 200));
  }
  return 0;
}
