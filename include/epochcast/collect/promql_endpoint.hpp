// A PromQL HTTP endpoint (Prometheus, Thanos, Mimir, VictoriaMetrics): its URL taken apart, and
// one way of saying why a request to it failed, shared by `collect --prometheus` and `watch`.
#pragma once

#include <string>
#include <string_view>

#include "epochcast/core/error.hpp"

namespace httplib {
enum class Error;  // cpp-httplib's transport error (an int-based scoped enum)
}

namespace epochcast {

struct PromqlEndpoint {
  std::string display_url;       // the URL without user:password, for messages and trace sources
  std::string scheme_host_port;  // for httplib::Client
  std::string path_prefix;       // "" or "/prometheus" (no trailing slash)
  std::string user, password;    // basic auth from user:password@ in the URL, percent-decoded
};

// http(s)://[user[:password]@]HOST[:PORT][/prefix]. Error(kInvalidArgument) naming the URL
// (without credentials) for another scheme or no host.
[[nodiscard]] PromqlEndpoint parse_promql_endpoint(const std::string& url);

// The URL with any user:password@ removed.
[[nodiscard]] std::string strip_credentials(const std::string& url);

// A request that got no HTTP answer: Error(kIo), "<where>: no answer within T s (timed out or
// connection dropped)" or "<where>: cannot reach the server (...)".
[[nodiscard]] Error promql_transport_error(const std::string& where, httplib::Error error, double timeout_s);

// An answer with an error status, in words: "HTTP 400 (bad_data): parse error ..." from
// Prometheus' JSON error body, else the body's first bytes made printable.
[[nodiscard]] std::string promql_refusal_detail(int status, std::string_view body);

}  // namespace epochcast
