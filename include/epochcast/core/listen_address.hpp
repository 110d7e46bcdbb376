// The one --listen parser of `collect --listen` (/metrics) and `serve --listen` (the HTTP API).
#pragma once

#include <string>

namespace epochcast {

struct ListenAddress {
  std::string host;
  int port = 0;
};

// "HOST:PORT", ":PORT" or "PORT" ("[::1]:PORT" too); a missing host is `default_host`. Port 0
// means "pick a free one". Error(kInvalidArgument) naming --listen for anything else (no sign,
// no blanks, nothing past 65535).
[[nodiscard]] ListenAddress parse_listen_address(const std::string& address, const std::string& default_host);

}  // namespace epochcast
