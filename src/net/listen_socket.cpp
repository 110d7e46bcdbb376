#include "epochcast/net/listen_socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include "epochcast/core/error.hpp"

namespace epochcast::net {

// Named, not anonymous: the unity build puts this library's files in one translation unit.
namespace listening {

// The kernel caps this at net.core.somaxconn (4096 on current kernels); httplib used 5, which
// dropped SYNs at 64 clients (issue 22; bench/serve_load.py).
constexpr int kListenBacklog = 4096;
// File descriptors kept free for everything else in the process (model files, logs).
constexpr std::size_t kSpareDescriptors = 64;

bool sockaddr_is_loopback(const sockaddr* a) {
  if (a->sa_family == AF_INET) return (ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr) >> 24) == 127;
  if (a->sa_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&v6)) return v6.s6_addr[12] == 127;
  }
  return false;
}

}  // namespace listening

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

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  sockaddr_storage a{};
  if (inet_pton(AF_INET, host.c_str(), &reinterpret_cast<sockaddr_in*>(&a)->sin_addr) == 1) {
    a.ss_family = AF_INET;
    return listening::sockaddr_is_loopback(reinterpret_cast<sockaddr*>(&a));
  }
  if (inet_pton(AF_INET6, host.c_str(), &reinterpret_cast<sockaddr_in6*>(&a)->sin6_addr) == 1) {
    a.ss_family = AF_INET6;
    return listening::sockaddr_is_loopback(reinterpret_cast<sockaddr*>(&a));
  }
  return false;
}

std::size_t connections_that_fit(std::size_t wanted) {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0) return wanted;
  if (files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
    getrlimit(RLIMIT_NOFILE, &files);
  }
  if (files.rlim_cur != RLIM_INFINITY && files.rlim_cur > 2 * listening::kSpareDescriptors)
    return std::min<std::size_t>(wanted, files.rlim_cur - listening::kSpareDescriptors);
  return wanted;
}

ListenSocket open_listen_socket(const std::string& host, int port, bool token_given, bool insecure) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port_text = std::to_string(port);
  const std::string where = fmt::format("{}:{}", host, port);
  if (getaddrinfo(host.c_str(), port_text.c_str(), &hints, &found) != 0 || found == nullptr)
    throw Error(ErrorCode::kIo, fmt::format("--listen {}: cannot resolve {}", where, host));
  ListenSocket s;
  bool loopback = true;
  for (addrinfo* a = found; a != nullptr && s.fd < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // No SO_REUSEPORT: two servers must not share a port silently.
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, listening::kListenBacklog) == 0) {
      s.fd = fd;
      loopback = listening::sockaddr_is_loopback(a->ai_addr);
    } else {
      ::close(fd);
    }
  }
  freeaddrinfo(found);
  if (s.fd < 0)
    throw Error(ErrorCode::kIo,
                fmt::format("--listen {}: cannot bind {}:{} (address in use or not ours)", where, host, port));
  if (!loopback && !token_given && !insecure) {
    ::close(s.fd);
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--listen {}: {} is not a loopback address; give --token (clients then send "
                            "'Authorization: Bearer TOKEN') or --insecure to serve it to anyone who can connect",
                            where, host));
  }
  fcntl(s.fd, F_SETFL, fcntl(s.fd, F_GETFL) | O_NONBLOCK);
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(s.fd, reinterpret_cast<sockaddr*>(&bound), &len);
  static_cast<void>(address_text(bound, s.port));
  return s;
}

}  // namespace epochcast::net
