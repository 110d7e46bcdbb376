#include "epochcast/net/http_front.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "epochcast/core/error.hpp"

namespace epochcast::net {

namespace {

using Clock = std::chrono::steady_clock;

// The kernel caps this at net.core.somaxconn (4096 on current kernels); httplib used 5.
constexpr int kListenBacklog = 4096;
// The loop wakes at least this often to expire deadlines; also the granularity of the timeouts.
constexpr int kTickMs = 50;
// Bytes read from one connection per wake-up, so one fast upload cannot starve the others.
constexpr std::size_t kReadPerWake = std::size_t{1} << 20;
// A chunk-size line ("1a2b;ext=...\r\n") longer than this is not a client we want.
constexpr std::size_t kMaxChunkLine = 1024;
// After an early refusal the rest of the upload is read and dropped for at most this long / this
// much, so the client reads the answer instead of a reset; then the connection is closed.
constexpr double kDrainSeconds = 1.0;
constexpr std::size_t kDrainBytes = std::size_t{4} << 20;
// File descriptors kept free for everything else in the process (model files, logs).
constexpr std::size_t kSpareDescriptors = 64;

double seconds_since(Clock::time_point t, Clock::time_point now) {
  return std::chrono::duration<double>(now - t).count();
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// httplib::Server::process_request is protected: a pointer to it taken through a derived class
// is an ordinary member pointer that applies to any Server.
struct Exposer : httplib::Server {
  static auto process_request_member() { return &Exposer::process_request; }
};

// The buffered request as httplib's input; the answer collected for the worker to write.
class BufferStream final : public httplib::Stream {
 public:
  BufferStream(std::string_view request, std::string remote_ip, int remote_port, std::string local_ip, int local_port)
      : request_(request),
        remote_ip_(std::move(remote_ip)),
        local_ip_(std::move(local_ip)),
        remote_port_(remote_port),
        local_port_(local_port) {}
  bool is_readable() const override { return pos_ < request_.size(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const std::size_t n = std::min(size, request_.size() - pos_);
    std::memcpy(ptr, request_.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    // The front has sent "100 Continue" itself, before the body was read.
    if (out.empty() && std::string_view(ptr, size).rfind("HTTP/1.1 100 ", 0) == 0) return static_cast<ssize_t>(size);
    out.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = remote_ip_;
    port = remote_port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = local_ip_;
    port = local_port_;
  }
  // No socket behind the bytes (httplib only compares it with FD_SETSIZE for its select()).
  socket_t socket() const override { return INVALID_SOCKET; }

  std::string out;

 private:
  std::string_view request_;
  std::size_t pos_ = 0;
  std::string remote_ip_, local_ip_;
  int remote_port_, local_port_;
};

enum class BodyKind { kNone, kLength, kChunked };
enum class ChunkState { kSize, kData, kDataEnd, kTrailer };
enum class ConnState { kReading, kWorking, kDraining };

struct Conn {
  int fd = -1;
  std::string ip;
  int port = 0;
  std::string local_ip;
  int local_port = 0;
  ConnState state = ConnState::kReading;
  std::string in;               // bytes from the start of the current request
  std::size_t head_end = 0;     // past the blank line; 0 while the head is incomplete
  std::size_t request_end = 0;  // past the body; 0 while incomplete
  BodyKind body = BodyKind::kNone;
  std::size_t body_length = 0;
  ChunkState chunk = ChunkState::kSize;
  std::size_t scan = 0;         // chunked: parse position in `in`
  std::size_t chunk_left = 0;
  std::size_t decoded = 0;
  std::size_t trailers = 0;
  bool started = false;         // a byte of the current request has arrived
  Clock::time_point request_start;
  Clock::time_point idle_since;
  std::size_t served = 0;
  bool close_after = false;     // set by the worker
  std::size_t drained = 0;
  Clock::time_point drain_start;
  std::size_t reserved = 0;     // declared Content-Length counted against the budget
};

struct Refusal {
  int status;
  std::string code;
  std::string message;
};

std::string status_text(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

// Our own messages only (no client bytes), so escaping quote and backslash is enough.
std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  }
  return out + "\"";
}

std::string refusal_bytes(const Refusal& r) {
  const std::string body =
      fmt::format("{{\"error\": {{\"code\": {}, \"message\": {}}}}}\n", json_string(r.code), json_string(r.message));
  std::string extra;
  if (r.status == 503) extra = "Retry-After: 1\r\n";
  if (r.status == 401) extra = "WWW-Authenticate: Bearer\r\n";
  return fmt::format("HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n{}",
                     r.status, status_text(r.status), body.size(), extra, body);
}


// What the head says about the body, or why it is refused.
struct HeadInfo {
  std::string method, target;
  BodyKind body = BodyKind::kNone;
  std::size_t length = 0;
  bool expect_continue = false;
  bool close = false;  // "Connection: close", or HTTP/1.0 without keep-alive
  std::string authorization;
};

std::optional<Refusal> parse_head(std::string_view head, const FrontLimits& limits, HeadInfo& info) {
  // head: up to and including the blank line's CRLF.
  std::size_t pos = head.find("\r\n");
  const std::string_view request_line = head.substr(0, pos);
  const std::size_t sp1 = request_line.find(' ');
  if (sp1 != std::string_view::npos) {
    info.method = std::string(request_line.substr(0, sp1));
    const std::size_t sp2 = request_line.find(' ', sp1 + 1);
    info.target = std::string(request_line.substr(sp1 + 1, sp2 == std::string_view::npos ? sp2 : sp2 - sp1 - 1));
  }
  pos += 2;
  std::size_t count = 0;
  bool have_length = false, have_chunked = false;
  std::string_view connection;
  while (pos < head.size()) {
    const std::size_t eol = head.find("\r\n", pos);
    const std::string_view line = head.substr(pos, eol - pos);
    pos = eol + 2;
    if (line.empty()) break;
    if (++count > limits.max_headers)
      return Refusal{431, "invalid_argument", fmt::format("more than {} header lines", limits.max_headers)};
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;  // httplib's parser answers 400 for these
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "Content-Length")) {
      std::size_t n = 0;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec == std::errc::result_out_of_range ||
          (ec == std::errc() && ptr == value.data() + value.size() && n > limits.max_body_bytes))
        return Refusal{413, "invalid_argument", ""};
      if (value.empty() || ec != std::errc() || ptr != value.data() + value.size() || (have_length && n != info.length))
        return Refusal{400, "invalid_argument", "malformed or repeated Content-Length"};
      have_length = true;
      info.length = n;
    } else if (iequals(name, "Transfer-Encoding")) {
      // Only "chunked" is read; anything else has no length we can bound.
      if (!iequals(value, "chunked"))
        return Refusal{400, "invalid_argument", "Transfer-Encoding other than chunked is not accepted"};
      have_chunked = true;
    } else if (iequals(name, "Expect")) {
      info.expect_continue = iequals(value, "100-continue");
    } else if (iequals(name, "Authorization")) {
      info.authorization = std::string(value);
    } else if (iequals(name, "Connection")) {
      connection = value;
    }
  }
  const bool http10 = request_line.size() >= 8 && request_line.substr(request_line.size() - 8) == "HTTP/1.0";
  info.close = iequals(connection, "close") || (http10 && !iequals(connection, "keep-alive"));
  // Both framings at once is how requests are smuggled past proxies (RFC 9112 6.3).
  if (have_length && have_chunked)
    return Refusal{400, "invalid_argument", "both Content-Length and Transfer-Encoding: chunked"};
  info.body = have_chunked ? BodyKind::kChunked : have_length && info.length > 0 ? BodyKind::kLength : BodyKind::kNone;
  return std::nullopt;
}

bool token_matches(std::string_view given, std::string_view token) {
  constexpr std::string_view kScheme = "Bearer ";
  if (given.size() < kScheme.size() || !iequals(given.substr(0, kScheme.size()), kScheme)) return false;
  given = trim(given.substr(kScheme.size()));
  // Compare every byte whatever the first difference, so timing does not reveal the prefix.
  unsigned char diff = given.size() == token.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ token[i % std::max<std::size_t>(token.size(), 1)]);
  return diff == 0 && !token.empty();
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

std::string address_text(const sockaddr_storage& a, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    port = ntohs(v6->sin6_port);
  }
  return text;
}

bool sockaddr_is_loopback(const sockaddr* a) {
  if (a->sa_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr) >> 24) == 127;
  if (a->sa_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&v6)) return v6.s6_addr[12] == 127;
  }
  return false;
}

}  // namespace

std::string escape_for_log(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (char ch : raw) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f || c == '\\') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += ch;
    }
  }
  return out;
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  sockaddr_storage a{};
  if (inet_pton(AF_INET, host.c_str(), &reinterpret_cast<sockaddr_in*>(&a)->sin_addr) == 1) {
    a.ss_family = AF_INET;
    return sockaddr_is_loopback(reinterpret_cast<sockaddr*>(&a));
  }
  if (inet_pton(AF_INET6, host.c_str(), &reinterpret_cast<sockaddr_in6*>(&a)->sin6_addr) == 1) {
    a.ss_family = AF_INET6;
    return sockaddr_is_loopback(reinterpret_cast<sockaddr*>(&a));
  }
  return false;
}

struct HttpFront::Impl {
  httplib::Server& routes;
  FrontLimits limits;
  int listen_fd = -1;
  int epoll_fd = -1;
  int wake_fd = -1;
  int port = 0;
  std::atomic<bool> stopping{false};
  std::atomic<bool> is_running{false};

  // Loop thread only.
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  std::unordered_map<std::string, std::size_t> per_client;
  std::size_t buffered = 0;  // sum of conn->in.size() as last accounted
  std::size_t reserved = 0;  // sum of conn->reserved: bodies announced, not yet answered
  bool accept_paused = false;

  // Shared with the workers.
  std::mutex mutex;
  std::condition_variable work_ready;
  std::deque<Conn*> queue;
  std::vector<Conn*> returned;
  std::size_t working = 0;
  bool workers_stop = false;

  Impl(httplib::Server& r, FrontLimits l) : routes(r), limits(std::move(l)) {}

  ~Impl() {
    for (auto& [fd, c] : conns) ::close(fd);
    for (int fd : {listen_fd, epoll_fd, wake_fd})
      if (fd >= 0) ::close(fd);
  }

  void log(const Conn& c, const HeadInfo* head, const Refusal& r) const {
    if (!limits.log) return;
    limits.log(fmt::format("{} {} {} {} (refused before routing: {})", c.ip,
                           head ? escape_for_log(head->method) : "-", head ? escape_for_log(head->target) : "-",
                           r.status, r.message));
  }

  void wake() const {
    const std::uint64_t one = 1;
    static_cast<void>(!::write(wake_fd, &one, sizeof one));
  }

  void watch(Conn& c) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = c.fd;
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c.fd, &ev);
  }

  void account(Conn& c, std::size_t before) {
    buffered = buffered - before + c.in.size();
  }

  void release(Conn* c) {
    reserved -= std::min(reserved, c->reserved);
    c->reserved = 0;
  }

  void close_conn(Conn* c) {
    release(c);
    buffered -= std::min(buffered, c->in.size());
    if (auto it = per_client.find(c->ip); it != per_client.end() && --it->second == 0) per_client.erase(it);
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, nullptr);
    const int fd = c->fd;
    ::close(fd);
    conns.erase(fd);  // frees c
    if (accept_paused) resume_accept();
  }

  // Best effort: the answer fits the socket buffer of a fresh connection.
  void send_now(int fd, const std::string& bytes) { static_cast<void>(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL)); }

  void refuse(Conn* c, const HeadInfo* head, Refusal r) {
    if (r.status == 413 && r.message.empty())
      r.message = fmt::format("upload larger than this server's limit of {} MiB ({})", limits.max_body_bytes >> 20,
                              limits.option_hint_body);
    log(*c, head, r);
    send_now(c->fd, refusal_bytes(r));
    ::shutdown(c->fd, SHUT_WR);
    release(c);
    // Read and drop what the client is still sending, briefly, so it sees the answer.
    buffered -= std::min(buffered, c->in.size());
    c->in.clear();
    c->in.shrink_to_fit();
    c->state = ConnState::kDraining;
    c->drain_start = Clock::now();
  }

  void resume_accept() {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listen_fd;
    epoll_ctl(epoll_fd, EPOLL_CTL_MOD, listen_fd, &ev);
    accept_paused = false;
  }

  void pause_accept() {
    epoll_event ev{};
    ev.events = 0;
    ev.data.fd = listen_fd;
    epoll_ctl(epoll_fd, EPOLL_CTL_MOD, listen_fd, &ev);
    accept_paused = true;
  }

  void accept_all() {
    for (;;) {
      sockaddr_storage peer{};
      socklen_t len = sizeof peer;
      const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) pause_accept();
        return;  // EAGAIN: all taken
      }
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      c->ip = address_text(peer, c->port);
      sockaddr_storage local{};
      socklen_t local_len = sizeof local;
      if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) == 0)
        c->local_ip = address_text(local, c->local_port);
      c->idle_since = Clock::now();
      // Nagle + delayed ACK cost ~40 ms on every keep-alive answer written in two pieces.
      int yes = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      std::size_t& mine = per_client[c->ip];
      Conn* raw = c.get();
      conns.emplace(fd, std::move(c));
      ++mine;
      if (conns.size() > limits.max_connections) {
        refuse(raw, nullptr, {503, "internal", fmt::format("server busy: {} connections open", conns.size() - 1)});
      } else if (mine > limits.max_per_client) {
        refuse(raw, nullptr,
               {503, "internal", fmt::format("too many connections from {} (limit {})", raw->ip, limits.max_per_client)});
      }
      watch(*raw);
    }
  }

  // GET /healthz from the loop (limits.healthz_body); false when the connection is closing.
  bool answer_healthz(Conn* c, bool close_requested) {
    ++c->served;
    const bool close = c->served >= limits.max_requests_per_connection || stopping || close_requested;
    const std::string bytes = fmt::format(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: {}\r\n\r\n{}",
        limits.healthz_body.size(), close ? "close" : "keep-alive", limits.healthz_body);
    const ssize_t n = ::send(c->fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    // A client whose socket buffer is full does not read its answers: no waiting for it here.
    // Closed as a refusal is (drained briefly, then closed by expire()): callers still hold c.
    if (close || n != static_cast<ssize_t>(bytes.size())) {
      ::shutdown(c->fd, SHUT_WR);
      buffered -= std::min(buffered, c->in.size());
      c->in.clear();
      c->in.shrink_to_fit();
      c->state = ConnState::kDraining;
      c->drain_start = Clock::now();
      return false;
    }
    const std::size_t before = c->in.size();
    c->in.erase(0, c->head_end);
    account(*c, before);
    c->head_end = c->request_end = 0;
    c->body = BodyKind::kNone;
    c->started = !c->in.empty();
    c->request_start = c->idle_since = Clock::now();
    return true;
  }

  // Moves a reading connection forward over the bytes it has; dispatches a complete request.
  void advance(Conn* c) {
    // One pass per request; a health probe answered here goes on to what is pipelined after it.
    while (advance_one(c)) {
    }
  }

  // True when a request was answered by the loop and the connection may hold another.
  bool advance_one(Conn* c) {
    if (c->state != ConnState::kReading) return false;
    if (c->head_end == 0) {
      const std::size_t end = c->in.find("\r\n\r\n");
      if (end == std::string::npos) {
        if (c->in.size() > limits.max_head_bytes)
          refuse(c, nullptr,
                 {431, "invalid_argument", fmt::format("request head over {} KiB", limits.max_head_bytes >> 10)});
        return false;
      }
      if (end + 4 > limits.max_head_bytes) {
        refuse(c, nullptr, {431, "invalid_argument", fmt::format("request head over {} KiB", limits.max_head_bytes >> 10)});
        return false;
      }
      c->head_end = end + 4;
      HeadInfo head;
      if (auto refusal = parse_head(std::string_view(c->in).substr(0, c->head_end), limits, head)) {
        refuse(c, &head, *refusal);
        return false;
      }
      const bool open = head.method == "GET" &&
                        (head.target == "/healthz" || std::find(limits.open_paths.begin(), limits.open_paths.end(),
                                                                head.target) != limits.open_paths.end());
      if (!limits.token.empty() && !open &&
          !token_matches(head.authorization, limits.token)) {
        refuse(c, &head, {401, "invalid_argument", "this server needs Authorization: Bearer TOKEN (serve --token)"});
        return false;
      }
      if (!limits.healthz_body.empty() && head.body == BodyKind::kNone && head.method == "GET" &&
          head.target == "/healthz")
        return answer_healthz(c, head.close);
      if (head.body == BodyKind::kLength) {
        if (buffered + reserved + head.length > buffer_budget()) {
          refuse(c, &head, {503, "internal", "server busy: too many upload bytes held; retry"});
          return false;
        }
        c->reserved = head.length;
        reserved += head.length;
      }
      c->body = head.body;
      c->body_length = head.length;
      c->scan = c->head_end;
      c->chunk = ChunkState::kSize;
      c->chunk_left = c->decoded = c->trailers = 0;
      if (head.expect_continue && head.body != BodyKind::kNone && c->in.size() == c->head_end)
        send_now(c->fd, "HTTP/1.1 100 Continue\r\n\r\n");
    }
    if (c->body == BodyKind::kNone) {
      c->request_end = c->head_end;
    } else if (c->body == BodyKind::kLength) {
      if (c->in.size() >= c->head_end + c->body_length) c->request_end = c->head_end + c->body_length;
    } else if (!advance_chunked(c)) {
      return false;  // refused
    }
    if (c->request_end != 0) dispatch(c);
    return false;
  }

  // False when the connection was refused.
  bool advance_chunked(Conn* c) {
    const std::string_view in = c->in;
    for (;;) {
      switch (c->chunk) {
        case ChunkState::kSize:
        case ChunkState::kTrailer: {
          const std::size_t eol = in.find("\r\n", c->scan);
          if (eol == std::string_view::npos) {
            if (in.size() - c->scan > kMaxChunkLine) {
              refuse(c, nullptr, {400, "invalid_argument", "chunk line too long"});
              return false;
            }
            return true;
          }
          const std::string_view line = in.substr(c->scan, eol - c->scan);
          c->scan = eol + 2;
          if (c->chunk == ChunkState::kTrailer) {
            if (line.empty()) {
              c->request_end = c->scan;
              return true;
            }
            if (++c->trailers > limits.max_headers) {
              refuse(c, nullptr, {431, "invalid_argument", "too many trailer lines"});
              return false;
            }
            continue;
          }
          const std::string_view size_text = trim(line.substr(0, line.find(';')));
          std::size_t size = 0;
          const auto [ptr, ec] = std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
          if (ec == std::errc::result_out_of_range ||
              (ec == std::errc() && size > limits.max_body_bytes - std::min(c->decoded, limits.max_body_bytes))) {
            refuse(c, nullptr, {413, "invalid_argument", ""});
            return false;
          }
          if (size_text.empty() || ec != std::errc() || ptr != size_text.data() + size_text.size()) {
            refuse(c, nullptr, {400, "invalid_argument", "malformed chunk size"});
            return false;
          }
          c->decoded += size;
          c->chunk_left = size;
          c->chunk = size == 0 ? ChunkState::kTrailer : ChunkState::kData;
          break;
        }
        case ChunkState::kData: {
          const std::size_t take = std::min(c->chunk_left, in.size() - c->scan);
          c->scan += take;
          c->chunk_left -= take;
          if (c->chunk_left != 0) return true;
          c->chunk = ChunkState::kDataEnd;
          break;
        }
        case ChunkState::kDataEnd:
          if (in.size() - c->scan < 2) return true;
          if (in.compare(c->scan, 2, "\r\n") != 0) {
            refuse(c, nullptr, {400, "invalid_argument", "chunk data not followed by CRLF"});
            return false;
          }
          c->scan += 2;
          c->chunk = ChunkState::kSize;
          break;
      }
    }
  }

  void dispatch(Conn* c) {
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, nullptr);
    {
      std::lock_guard lock(mutex);
      if (queue.size() < limits.max_queue) {
        c->state = ConnState::kWorking;
        queue.push_back(c);
        work_ready.notify_one();
        return;
      }
    }
    watch(*c);
    refuse(c, nullptr, {503, "internal", fmt::format("server busy: {} requests queued; retry", limits.max_queue)});
  }

  void read_from(Conn* c) {
    char buffer[64 * 1024];
    std::size_t total = 0;
    const std::size_t budget = buffer_budget();
    // Stops once a request is complete: what follows stays in the socket until it is answered.
    while (total < kReadPerWake && c->state != ConnState::kWorking) {
      const ssize_t n = ::recv(c->fd, buffer, sizeof buffer, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) {
        // The client is gone or has stopped sending: an unfinished request cannot complete.
        if (c->state == ConnState::kReading && c->started) {
          Refusal r{400, "invalid_argument", "the connection ended inside a request"};
          log(*c, nullptr, r);
          send_now(c->fd, refusal_bytes(r));
        }
        close_conn(c);
        return;
      }
      total += static_cast<std::size_t>(n);
      if (c->state == ConnState::kDraining) {
        c->drained += static_cast<std::size_t>(n);
        if (c->drained > kDrainBytes) {
          close_conn(c);
          return;
        }
        continue;
      }
      if (!c->started) {
        c->started = true;
        c->request_start = Clock::now();
      }
      const std::size_t before = c->in.size();
      c->in.append(buffer, static_cast<std::size_t>(n));
      account(*c, before);
      // The raw body may exceed the decoded limit by its chunk framing; bound that too.
      const std::size_t raw_limit = limits.max_head_bytes + limits.max_body_bytes + limits.max_body_bytes / 8 + 65536;
      if (c->in.size() > raw_limit) {
        refuse(c, nullptr, {413, "invalid_argument", ""});
        continue;
      }
      if (buffered > budget && c->body == BodyKind::kChunked) {
        refuse(c, nullptr, {503, "internal", "server busy: too many upload bytes held; retry"});
        continue;
      }
      advance(c);
    }
  }

  // Request bytes held in all connections at once.
  std::size_t buffer_budget() const {
    return limits.max_buffered_bytes != 0 ? limits.max_buffered_bytes
                                          : std::max(limits.max_body_bytes * 4, std::size_t{64} << 20);
  }

  void expire(Clock::time_point now) {
    std::vector<Conn*> expired_request, expired_idle;
    for (auto& [fd, c] : conns) {
      if (c->state == ConnState::kDraining) {
        if (seconds_since(c->drain_start, now) > kDrainSeconds) expired_idle.push_back(c.get());
      } else if (c->state == ConnState::kReading) {
        if (!c->started) {
          if (seconds_since(c->idle_since, now) > limits.idle_timeout_s) expired_idle.push_back(c.get());
        } else if (seconds_since(c->request_start, now) > (c->head_end == 0 ? limits.head_timeout_s : limits.request_timeout_s)) {
          expired_request.push_back(c.get());
        }
      }
    }
    for (Conn* c : expired_idle) close_conn(c);
    for (Conn* c : expired_request)
      refuse(c, nullptr,
             {408, "invalid_argument",
              c->head_end == 0 ? fmt::format("request head not complete in {} s", limits.head_timeout_s)
                               : fmt::format("request not complete in {} s", limits.request_timeout_s)});
  }

  // Back from a worker: close, or start on the next request (maybe already buffered).
  void take_back(Conn* c) {
    if (c->close_after || stopping) {
      close_conn(c);
      return;
    }
    release(c);
    const std::size_t before = c->in.size();
    c->in.erase(0, c->request_end);
    if (c->in.capacity() > (std::size_t{1} << 20)) c->in.shrink_to_fit();
    account(*c, before);
    c->state = ConnState::kReading;
    c->head_end = c->request_end = 0;
    c->body = BodyKind::kNone;
    c->started = !c->in.empty();
    c->request_start = c->idle_since = Clock::now();
    watch(*c);
    advance(c);
  }

  void worker() {
    const auto process = Exposer::process_request_member();
    for (;;) {
      Conn* c = nullptr;
      {
        std::unique_lock lock(mutex);
        work_ready.wait(lock, [&] { return workers_stop || !queue.empty(); });
        if (queue.empty()) return;
        c = queue.front();
        queue.pop_front();
        ++working;
      }
      BufferStream stream(std::string_view(c->in).substr(0, c->request_end), c->ip, c->port, c->local_ip, c->local_port);
      ++c->served;
      const bool close = c->served >= limits.max_requests_per_connection || stopping;
      bool closed = false;
      try {
        (routes.*process)(stream, close, closed, nullptr);
      } catch (...) {
        closed = true;  // the routes catch their own; nothing may escape a worker
      }
      const bool written = write_all(c->fd, stream.out);
      c->close_after = close || closed || !written || stream.out.empty();
      {
        std::lock_guard lock(mutex);
        --working;
        returned.push_back(c);
      }
      wake();
    }
  }

  bool write_all(int fd, std::string_view bytes) const {
    const auto deadline = Clock::now() + std::chrono::duration<double>(limits.write_timeout_s);
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n > 0) {
        bytes.remove_prefix(static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000))) < 0 && errno != EINTR) return false;
    }
    return true;
  }

  void loop() {
    std::vector<std::thread> workers;
    for (int i = 0; i < limits.threads; ++i) workers.emplace_back([this] { worker(); });
    std::vector<epoll_event> events(256);
    auto last_expire = Clock::now();
    while (!stopping) {
      const int n = epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), kTickMs);
      for (int i = 0; i < n; ++i) {
        const int fd = events[static_cast<std::size_t>(i)].data.fd;
        if (fd == listen_fd) {
          accept_all();
        } else if (fd == wake_fd) {
          std::uint64_t count = 0;
          static_cast<void>(!::read(wake_fd, &count, sizeof count));
        } else if (auto it = conns.find(fd); it != conns.end() && it->second->state != ConnState::kWorking) {
          read_from(it->second.get());
        }
      }
      std::vector<Conn*> back;
      {
        std::lock_guard lock(mutex);
        back.swap(returned);
      }
      for (Conn* c : back) take_back(c);
      const auto now = Clock::now();
      if (now - last_expire >= std::chrono::milliseconds(kTickMs)) {
        expire(now);
        last_expire = now;
        if (accept_paused && conns.size() + kSpareDescriptors < limits.max_connections) resume_accept();
      }
    }
    // Stop: no new connections; what is queued or in flight is answered, then all close.
    ::close(listen_fd);
    listen_fd = -1;
    {
      std::lock_guard lock(mutex);
      workers_stop = true;
    }
    work_ready.notify_all();
    for (auto& t : workers) t.join();
    for (auto& [fd, c] : conns) ::close(fd);
    conns.clear();
    per_client.clear();
    buffered = 0;
  }
};

HttpFront::HttpFront(httplib::Server& routes, const std::string& host, int port, FrontLimits limits)
    : impl_(std::make_unique<Impl>(routes, std::move(limits))) {
  Impl& m = *impl_;
  if (m.limits.threads < 1) m.limits.threads = 1;
  // Room for the connection limit: raise the soft descriptor limit to the hard one.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
    if (files.rlim_cur < files.rlim_max) {
      files.rlim_cur = files.rlim_max;
      setrlimit(RLIMIT_NOFILE, &files);
      getrlimit(RLIMIT_NOFILE, &files);
    }
    if (files.rlim_cur != RLIM_INFINITY && files.rlim_cur > 2 * kSpareDescriptors)
      m.limits.max_connections = std::min<std::size_t>(m.limits.max_connections, files.rlim_cur - kSpareDescriptors);
  }
  // httplib's keep-alive header announces these; the front enforces them.
  routes.set_keep_alive_timeout(static_cast<time_t>(m.limits.idle_timeout_s));
  routes.set_keep_alive_max_count(m.limits.max_requests_per_connection);
  routes.set_payload_max_length(m.limits.max_body_bytes);

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port_text = std::to_string(port);
  const std::string where = fmt::format("{}:{}", host, port);
  if (getaddrinfo(host.c_str(), port_text.c_str(), &hints, &found) != 0 || found == nullptr)
    throw Error(ErrorCode::kIo, fmt::format("--listen {}: cannot resolve {}", where, host));
  bool loopback = true;
  for (addrinfo* a = found; a != nullptr && m.listen_fd < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // No SO_REUSEPORT: two servers must not share a port silently.
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, kListenBacklog) == 0) {
      m.listen_fd = fd;
      loopback = sockaddr_is_loopback(a->ai_addr);
    } else {
      ::close(fd);
    }
  }
  freeaddrinfo(found);
  if (m.listen_fd < 0)
    throw Error(ErrorCode::kIo, fmt::format("--listen {}: cannot bind {}:{} (address in use or not ours)", where, host, port));
  if (!loopback && m.limits.token.empty() && !m.limits.insecure) {
    ::close(m.listen_fd);
    m.listen_fd = -1;
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--listen {}: {} is not a loopback address; give --token (clients then send "
                            "'Authorization: Bearer TOKEN') or --insecure to serve it to anyone who can connect",
                            where, host));
  }
  set_nonblocking(m.listen_fd);
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(m.listen_fd, reinterpret_cast<sockaddr*>(&bound), &len);
  address_text(bound, m.port);

  m.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  m.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (m.epoll_fd < 0 || m.wake_fd < 0) throw Error(ErrorCode::kIo, "cannot create the server's event loop");
  for (int fd : {m.listen_fd, m.wake_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
}

HttpFront::~HttpFront() = default;

int HttpFront::port() const { return impl_->port; }

void HttpFront::run() {
  impl_->is_running = true;
  impl_->loop();
  impl_->is_running = false;
}

void HttpFront::stop() {
  impl_->stopping = true;
  impl_->wake();
}

bool HttpFront::running() const { return impl_->is_running; }

}  // namespace epochcast::net
