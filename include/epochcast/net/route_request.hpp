// The request path: one complete, framed request handed to cpp-httplib's parser and routes
// over a buffer (no socket), the answer collected as bytes. The front's workers and
// HttpApi::answer both call this; also the small client-byte helpers for logs and tokens.
#pragma once

#include <string>
#include <string_view>

#include "epochcast/net/request_framing.hpp"

namespace httplib {
class Server;
}

namespace epochcast::net {

// Who sent the request, as httplib's handlers see it (req.remote_addr, ...).
struct Peer {
  std::string ip = "127.0.0.1";
  int port = 0;
  std::string local_ip = "127.0.0.1";
  int local_port = 0;
};

// httplib parses `request` (head and body, as RequestFramer framed it), routes it, and the
// answer comes back as bytes. `close`: the answer says Connection: close. Never throws (a
// route's escaped exception closes the connection with whatever was written).
[[nodiscard]] RoutedAnswer route_request(httplib::Server& routes, std::string_view request, const Peer& peer,
                                         bool close);

// Control characters, backslash and bytes >= 0x7f as \xHH: a request log line cannot carry
// terminal escapes or a forged second line.
[[nodiscard]] std::string escape_for_log(std::string_view raw);

// "Bearer TOKEN" against the server's token, in time independent of where they differ.
[[nodiscard]] bool token_matches(std::string_view authorization, std::string_view token);

}  // namespace epochcast::net
