// The listening socket of a front: HOST:PORT resolved and bound with a real backlog, and the
// rule that a non-loopback address needs a token (or --insecure).
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <string>

namespace epochcast::net {

// True for 127.0.0.0/8, ::1 (and v4-mapped 127/8) and "localhost".
[[nodiscard]] bool is_loopback_host(const std::string& host);

// A bound, listening, non-blocking socket and the port it got (port 0 picks one).
// Error(kIo) when it cannot bind; Error(kInvalidArgument) for a non-loopback address when
// `token_given` and `insecure` are both false.
struct ListenSocket {
  int fd = -1;
  int port = 0;
};
[[nodiscard]] ListenSocket open_listen_socket(const std::string& host, int port, bool token_given, bool insecure);

// "1.2.3.4" / "::1" of a socket address; `port` set from it.
[[nodiscard]] std::string address_text(const sockaddr_storage& a, int& port);

// Raises the soft descriptor limit to the hard one; the connections that then fit, keeping
// spare descriptors for the rest of the process, capped at `wanted`.
[[nodiscard]] std::size_t connections_that_fit(std::size_t wanted);

}  // namespace epochcast::net
