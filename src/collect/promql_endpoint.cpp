#include "epochcast/collect/promql_endpoint.hpp"

#include <httplib.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "epochcast/core/text.hpp"

namespace epochcast {

namespace {
// Enough of an unexpected error body to recognise it (an HTML proxy page, a login form).
constexpr std::size_t kBodyExcerptBytes = 120;
}  // namespace

std::string strip_credentials(const std::string& url) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const auto host_start = scheme + 3;
  const auto path = url.find('/', host_start);
  const auto at = url.rfind('@', path == std::string::npos ? url.size() : path);
  if (at == std::string::npos || at < host_start) return url;
  return url.substr(0, host_start) + url.substr(at + 1);
}

PromqlEndpoint parse_promql_endpoint(const std::string& url) {
  PromqlEndpoint out;
  out.display_url = strip_credentials(url);
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos || (url.compare(0, scheme_end, "http") != 0 && url.compare(0, scheme_end, "https") != 0))
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("PromQL endpoint '{}': expected http://HOST:PORT or https://HOST:PORT", out.display_url));
  const auto host_start = scheme_end + 3;
  const auto path_start = url.find('/', host_start);
  std::string authority = url.substr(host_start, path_start == std::string::npos ? std::string::npos : path_start - host_start);
  if (const auto at = authority.rfind('@'); at != std::string::npos) {
    const std::string userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    const auto colon = userinfo.find(':');
    out.user = httplib::detail::decode_url(userinfo.substr(0, colon), false);
    if (colon != std::string::npos) out.password = httplib::detail::decode_url(userinfo.substr(colon + 1), false);
  }
  if (authority.empty())
    throw Error(ErrorCode::kInvalidArgument, fmt::format("PromQL endpoint '{}' has no host", out.display_url));
  out.scheme_host_port = url.substr(0, scheme_end + 3) + authority;
  if (path_start != std::string::npos) out.path_prefix = url.substr(path_start);
  while (!out.path_prefix.empty() && out.path_prefix.back() == '/') out.path_prefix.pop_back();
  return out;
}

Error promql_transport_error(const std::string& where, httplib::Error error, double timeout_s) {
  if (error == httplib::Error::Read || error == httplib::Error::Write)
    return Error(ErrorCode::kIo,
                 fmt::format("{}: no answer within {:g} s (timed out or connection dropped)", where, timeout_s));
  return Error(ErrorCode::kIo, fmt::format("{}: cannot reach the server ({}) — is it running?", where,
                                           error == httplib::Error::Connection ? "connection refused or host unreachable"
                                                                               : httplib::to_string(error)));
}

std::string promql_refusal_detail(int status, std::string_view body) {
  std::string detail = fmt::format("HTTP {}", status);
  try {
    const auto doc = nlohmann::json::parse(body);
    if (doc.is_object() && doc.contains("error"))
      return detail + fmt::format(" ({}): {}", text::printable(doc.value("errorType", std::string("?")), kBodyExcerptBytes),
                                  text::printable(doc.value("error", std::string("?")), kBodyExcerptBytes * 4));
  } catch (const nlohmann::json::exception&) {
  }
  return detail + fmt::format(": {}", text::printable(body, kBodyExcerptBytes));
}

}  // namespace epochcast
