#include "epochcast/net/route_request.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace epochcast::net {

// Named, not anonymous: the unity build puts this library's files in one translation unit.
namespace routing {

// httplib::Server::process_request is protected: a pointer to it taken through a derived class
// is an ordinary member pointer that applies to any Server.
struct Exposer : httplib::Server {
  static auto process_request_member() { return &Exposer::process_request; }
};

// The buffered request as httplib's input; the answer collected for the caller to write.
class BufferStream final : public httplib::Stream {
 public:
  BufferStream(std::string_view request, const Peer& peer) : request_(request), peer_(peer) {}
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
    ip = peer_.ip;
    port = peer_.port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = peer_.local_ip;
    port = peer_.local_port;
  }
  // No socket behind the bytes (httplib only compares it with FD_SETSIZE for its select()).
  socket_t socket() const override { return INVALID_SOCKET; }

  std::string out;

 private:
  std::string_view request_;
  std::size_t pos_ = 0;
  const Peer& peer_;
};

}  // namespace routing

RoutedAnswer route_request(httplib::Server& routes, std::string_view request, const Peer& peer, bool close) {
  static const auto process = routing::Exposer::process_request_member();
  routing::BufferStream stream(request, peer);
  bool closed = false;
  try {
    (routes.*process)(stream, close, closed, nullptr);
  } catch (...) {
    closed = true;  // the routes catch their own; nothing may escape a worker
  }
  return RoutedAnswer{std::move(stream.out), close || closed};
}

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

bool token_matches(std::string_view given, std::string_view token) {
  constexpr std::string_view kScheme = "Bearer ";
  if (token.empty()) return false;  // no token configured matches nothing
  const auto lower = [](char c) { return std::tolower(static_cast<unsigned char>(c)); };
  if (given.size() < kScheme.size() ||
      !std::equal(kScheme.begin(), kScheme.end(), given.begin(), [&](char a, char b) { return lower(a) == lower(b); }))
    return false;
  given.remove_prefix(kScheme.size());
  while (!given.empty() && (given.front() == ' ' || given.front() == '\t')) given.remove_prefix(1);
  while (!given.empty() && (given.back() == ' ' || given.back() == '\t')) given.remove_suffix(1);
  // Compare every byte whatever the first difference, so timing does not reveal the prefix.
  unsigned char diff = given.size() == token.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ token[i % token.size()]);
  return diff == 0;
}

}  // namespace epochcast::net
