#include "epochcast/net/http_front.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "epochcast/core/error.hpp"
#include "epochcast/net/request_framing.hpp"

namespace epochcast::net {

// Named, not anonymous: the unity build puts this library's files in one translation unit.
namespace front {

using Clock = std::chrono::steady_clock;

// The loop wakes at least this often to expire deadlines; also the granularity of the timeouts.
constexpr int kTickMs = 50;
// Bytes read from one connection per wake-up, so one fast upload cannot starve the others.
constexpr std::size_t kReadPerWake = std::size_t{1} << 20;
// After an early refusal the rest of the upload is read and dropped for at most this long / this
// much, so the client reads the answer instead of a reset; then the connection is closed.
constexpr double kDrainSeconds = 1.0;
constexpr std::size_t kDrainBytes = std::size_t{4} << 20;
// Buffered request bytes in all connections when FrontLimits::max_buffered_bytes is 0: four
// full bodies, at least this much (ServeLimits.ChunkedBodiesAreCappedToo).
constexpr std::size_t kMinBufferBudget = std::size_t{64} << 20;

double seconds_since(Clock::time_point t, Clock::time_point now) {
  return std::chrono::duration<double>(now - t).count();
}

enum class ConnState { kReading, kWorking, kDraining };

struct Conn {
  explicit Conn(const FrontLimits& limits) : framer(limits) {}
  int fd = -1;
  Peer peer;
  ConnState state = ConnState::kReading;
  std::string in;  // bytes from the start of the current request
  RequestFramer framer;
  bool started = false;  // a byte of the current request has arrived
  Clock::time_point request_start;
  Clock::time_point idle_since;
  std::size_t served = 0;
  bool close_after = false;  // set by the worker
  std::size_t drained = 0;
  Clock::time_point drain_start;
  std::size_t reserved = 0;  // declared Content-Length counted against the budget
};

}  // namespace front

struct HttpFront::Impl {
  using Clock = front::Clock;
  using Conn = front::Conn;
  using ConnState = front::ConnState;

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
  bool workers_stop = false;

  Impl(httplib::Server& r, FrontLimits l) : routes(r), limits(std::move(l)) {}

  ~Impl() {
    for (auto& [fd, c] : conns) ::close(fd);
    for (int fd : {listen_fd, epoll_fd, wake_fd})
      if (fd >= 0) ::close(fd);
  }

  void log(const Conn& c, const HeadInfo* head, const Refusal& r) const {
    if (!limits.log) return;
    limits.log(fmt::format("{} {} {} {} (refused before routing: {})", c.peer.ip,
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

  void account(Conn& c, std::size_t before) { buffered = buffered - before + c.in.size(); }

  void release(Conn* c) {
    reserved -= std::min(reserved, c->reserved);
    c->reserved = 0;
  }

  void close_conn(Conn* c) {
    release(c);
    buffered -= std::min(buffered, c->in.size());
    if (auto it = per_client.find(c->peer.ip); it != per_client.end() && --it->second == 0) per_client.erase(it);
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, nullptr);
    const int fd = c->fd;
    ::close(fd);
    conns.erase(fd);  // frees c
    if (accept_paused) resume_accept();
  }

  // Best effort: the answer fits the socket buffer of a fresh connection.
  static void send_now(int fd, const std::string& bytes) {
    static_cast<void>(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL));
  }

  // Stops reading requests: drops what is held, closes the write side, drains briefly.
  void start_draining(Conn* c) {
    ::shutdown(c->fd, SHUT_WR);
    release(c);
    buffered -= std::min(buffered, c->in.size());
    c->in.clear();
    c->in.shrink_to_fit();
    c->state = ConnState::kDraining;
    c->drain_start = Clock::now();
  }

  void refuse(Conn* c, const HeadInfo* head, Refusal r) {
    fill_refusal_message(r, limits);
    log(*c, head, r);
    send_now(c->fd, refusal_bytes(r));
    // Read and drop what the client is still sending, briefly, so it sees the answer.
    start_draining(c);
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
      auto c = std::make_unique<Conn>(limits);
      c->fd = fd;
      c->peer.ip = address_text(peer, c->peer.port);
      sockaddr_storage local{};
      socklen_t local_len = sizeof local;
      if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) == 0)
        c->peer.local_ip = address_text(local, c->peer.local_port);
      c->idle_since = Clock::now();
      // Nagle + delayed ACK cost ~40 ms on every keep-alive answer written in two pieces.
      int yes = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      std::size_t& mine = per_client[c->peer.ip];
      Conn* raw = c.get();
      conns.emplace(fd, std::move(c));
      ++mine;
      if (conns.size() > limits.max_connections) {
        refuse(raw, nullptr, {503, "internal", fmt::format("server busy: {} connections open", conns.size() - 1)});
      } else if (mine > limits.max_per_client) {
        refuse(raw, nullptr,
               {503, "internal",
                fmt::format("too many connections from {} (limit {})", raw->peer.ip, limits.max_per_client)});
      }
      watch(*raw);
    }
  }

  // The next request of a kept-alive connection: its bytes (maybe already here) start at `end`.
  void next_request(Conn* c, std::size_t end) {
    const std::size_t before = c->in.size();
    c->in.erase(0, end);
    if (c->in.capacity() > (std::size_t{1} << 20)) c->in.shrink_to_fit();
    account(*c, before);
    c->framer.reset();
    c->started = !c->in.empty();
    c->request_start = c->idle_since = Clock::now();
  }

  // GET /healthz from the loop (limits.healthz_body); false when the connection is closing.
  bool answer_healthz(Conn* c, bool close_requested) {
    ++c->served;
    const bool close = c->served >= limits.max_requests_per_connection || stopping || close_requested;
    const std::string bytes = healthz_bytes(limits, close);
    const ssize_t n = ::send(c->fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    // A client whose socket buffer is full does not read its answers: no waiting for it here.
    // Closed as a refusal is (drained briefly, then closed by expire()): callers still hold c.
    if (close || n != static_cast<ssize_t>(bytes.size())) {
      start_draining(c);
      return false;
    }
    next_request(c, c->framer.head_end());
    return true;
  }

  // Moves a reading connection forward over the bytes it has; dispatches a complete request.
  void advance(Conn* c) {
    // One pass per request; a health probe answered here goes on to what is pipelined after it.
    while (advance_one(c)) {
    }
  }

  // The front's own policy once a head is complete: the token, the health probe, the budget
  // of announced bodies, 100 Continue. True when the request goes on to its body.
  bool on_head(Conn* c, bool& answered_here) {
    const HeadInfo& head = c->framer.head();
    if (auto refusal = admit(head, limits)) {
      refuse(c, &head, *refusal);
      return false;
    }
    if (is_front_healthz(head, limits)) {
      answered_here = answer_healthz(c, head.close);
      return false;
    }
    if (head.body == BodyKind::kLength) {
      if (buffered + reserved + head.length > buffer_budget()) {
        refuse(c, &head, {503, "internal", "server busy: too many upload bytes held; retry"});
        return false;
      }
      c->reserved = head.length;
      reserved += head.length;
    }
    if (head.expect_continue && head.body != BodyKind::kNone && c->in.size() == c->framer.head_end())
      send_now(c->fd, "HTTP/1.1 100 Continue\r\n\r\n");
    return true;
  }

  // True when a request was answered by the loop and the connection may hold another.
  bool advance_one(Conn* c) {
    if (c->state != ConnState::kReading) return false;
    RequestFramer::Step step = c->framer.advance(c->in);
    if (step == RequestFramer::Step::kHeadDone) {
      bool answered_here = false;
      if (!on_head(c, answered_here)) return answered_here;
      step = c->framer.advance(c->in);
    }
    switch (step) {
      case RequestFramer::Step::kRefused:
        refuse(c, c->framer.head_done() ? &c->framer.head() : nullptr, c->framer.refusal());
        return false;
      case RequestFramer::Step::kComplete:
        dispatch(c);
        return false;
      default:
        return false;
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
    while (total < front::kReadPerWake && c->state != ConnState::kWorking) {
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
        if (c->drained > front::kDrainBytes) {
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
      if (buffered > budget && c->framer.head_done() && c->framer.head().body == BodyKind::kChunked) {
        refuse(c, nullptr, {503, "internal", "server busy: too many upload bytes held; retry"});
        continue;
      }
      advance(c);
    }
  }

  // Request bytes held in all connections at once.
  std::size_t buffer_budget() const {
    return limits.max_buffered_bytes != 0 ? limits.max_buffered_bytes
                                          : std::max(limits.max_body_bytes * 4, front::kMinBufferBudget);
  }

  void expire(Clock::time_point now) {
    std::vector<Conn*> expired_request, expired_idle;
    for (auto& [fd, c] : conns) {
      if (c->state == ConnState::kDraining) {
        if (front::seconds_since(c->drain_start, now) > front::kDrainSeconds) expired_idle.push_back(c.get());
      } else if (c->state == ConnState::kReading) {
        if (!c->started) {
          if (front::seconds_since(c->idle_since, now) > limits.idle_timeout_s) expired_idle.push_back(c.get());
        } else if (front::seconds_since(c->request_start, now) >
                   (c->framer.head_done() ? limits.request_timeout_s : limits.head_timeout_s)) {
          expired_request.push_back(c.get());
        }
      }
    }
    for (Conn* c : expired_idle) close_conn(c);
    for (Conn* c : expired_request)
      refuse(c, nullptr,
             {408, "invalid_argument",
              c->framer.head_done() ? fmt::format("request not complete in {} s", limits.request_timeout_s)
                                    : fmt::format("request head not complete in {} s", limits.head_timeout_s)});
  }

  // Back from a worker: close, or start on the next request (maybe already buffered).
  void take_back(Conn* c) {
    if (c->close_after || stopping) {
      close_conn(c);
      return;
    }
    release(c);
    c->state = ConnState::kReading;
    next_request(c, c->framer.request_end());
    watch(*c);
    advance(c);
  }

  void worker() {
    for (;;) {
      Conn* c = nullptr;
      {
        std::unique_lock lock(mutex);
        work_ready.wait(lock, [&] { return workers_stop || !queue.empty(); });
        if (queue.empty()) return;
        c = queue.front();
        queue.pop_front();
      }
      ++c->served;
      const bool close = c->served >= limits.max_requests_per_connection || stopping;
      const RoutedAnswer answer =
          route_request(routes, std::string_view(c->in).substr(0, c->framer.request_end()), c->peer, close);
      const bool written = write_all(c->fd, answer.bytes);
      c->close_after = answer.close || !written || answer.bytes.empty();
      {
        std::lock_guard lock(mutex);
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
      const int n = epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), front::kTickMs);
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
      if (now - last_expire >= std::chrono::milliseconds(front::kTickMs)) {
        expire(now);
        last_expire = now;
        if (accept_paused && conns.size() < limits.max_connections) resume_accept();
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
  m.limits.max_connections = connections_that_fit(m.limits.max_connections);
  // httplib's keep-alive header announces these; the front enforces them.
  routes.set_keep_alive_timeout(static_cast<time_t>(m.limits.idle_timeout_s));
  routes.set_keep_alive_max_count(m.limits.max_requests_per_connection);
  routes.set_payload_max_length(m.limits.max_body_bytes);

  const ListenSocket s = open_listen_socket(host, port, !m.limits.token.empty(), m.limits.insecure);
  m.listen_fd = s.fd;
  m.port = s.port;
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

const FrontLimits& HttpFront::limits() const { return impl_->limits; }

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
