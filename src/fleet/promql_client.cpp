#include "promql_client.hpp"

#include <httplib.h>

#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "epochcast/core/error.hpp"
#include "epochcast/fleet/watch.hpp"

namespace epochcast::fleet {

PromClient::PromClient(const std::string& url, double timeout_s) : display_url_(strip_credentials(url)) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos)
    throw Error(ErrorCode::kInvalidArgument, fmt::format("PromQL endpoint '{}': expected http://HOST:PORT", display_url_));
  const auto host_start = scheme_end + 3;
  const auto path_start = url.find('/', host_start);
  std::string authority = url.substr(host_start, path_start == std::string::npos ? std::string::npos : path_start - host_start);
  std::string user, password;
  if (const auto at = authority.rfind('@'); at != std::string::npos) {
    const std::string userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    const auto colon = userinfo.find(':');
    user = httplib::detail::decode_url(userinfo.substr(0, colon), false);
    if (colon != std::string::npos) password = httplib::detail::decode_url(userinfo.substr(colon + 1), false);
  }
  if (authority.empty()) throw Error(ErrorCode::kInvalidArgument, fmt::format("PromQL endpoint '{}' has no host", display_url_));
  if (path_start != std::string::npos) path_prefix_ = url.substr(path_start);
  while (!path_prefix_.empty() && path_prefix_.back() == '/') path_prefix_.pop_back();
  while (display_url_.size() > 1 && display_url_.back() == '/') display_url_.pop_back();
  client_ = std::make_unique<httplib::Client>(url.substr(0, host_start) + authority);
  const auto whole = static_cast<time_t>(std::floor(timeout_s));
  const auto micro = static_cast<time_t>((timeout_s - static_cast<double>(whole)) * 1e6);
  client_->set_connection_timeout(whole, micro);
  client_->set_read_timeout(whole, micro);
  client_->set_write_timeout(whole, micro);
  if (!user.empty()) client_->set_basic_auth(user, password);
}

PromClient::~PromClient() = default;

std::string PromClient::post(const std::string& endpoint, const std::multimap<std::string, std::string>& form) {
  ++requests_;
  const std::string where = display_url_ + endpoint;
  httplib::Params params(form.begin(), form.end());
  auto res = client_->Post(path_prefix_ + endpoint, params);
  if (!res) {
    const auto err = res.error();
    if (err == httplib::Error::Read || err == httplib::Error::Write)
      throw Error(ErrorCode::kIo, fmt::format("PromQL endpoint {}: no answer in time (timed out or connection dropped)", where));
    throw Error(ErrorCode::kIo, fmt::format("PromQL endpoint {}: cannot reach the server ({})", where,
                                            err == httplib::Error::Connection ? "connection refused or host unreachable"
                                                                              : httplib::to_string(err)));
  }
  if (res->status != 200) {
    std::string detail = fmt::format("HTTP {}", res->status);
    try {
      const auto doc = nlohmann::json::parse(res->body);
      detail += fmt::format(" ({}): {}", doc.value("errorType", std::string("?")), doc.value("error", std::string("?")));
    } catch (const nlohmann::json::exception&) {
      detail += fmt::format(": '{}'", res->body.substr(0, 120));
    }
    throw Error(ErrorCode::kRemote, fmt::format("PromQL endpoint {} refused the request: {}", where, detail));
  }
  return std::move(res->body);
}

std::vector<Labels> PromClient::series(const std::string& match, double start, double end) {
  const std::string where = display_url_ + "/api/v1/series";
  const std::string body = post("/api/v1/series", {{"match[]", match},
                                                   {"start", fmt::format("{:.3f}", start)},
                                                   {"end", fmt::format("{:.3f}", end)}});
  std::vector<Labels> out;
  try {
    const auto doc = nlohmann::json::parse(body);
    if (doc.value("status", std::string()) != "success")
      throw Error(ErrorCode::kRemote, fmt::format("PromQL endpoint {} answered status {}: {}", where,
                                                  doc.value("status", std::string("?")),
                                                  doc.value("error", std::string("no error text"))));
    for (const auto& s : doc.at("data")) {
      Labels labels;
      for (const auto& [k, v] : s.items()) labels[k] = v.get<std::string>();
      out.push_back(std::move(labels));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kRemote, fmt::format("PromQL endpoint {} returned an unexpected answer ({}); first bytes: '{}'",
                                                where, e.what(), body.substr(0, 80)));
  }
  return out;
}

std::vector<PrometheusSeries> PromClient::samples(const std::string& selector, double end, double window_s) {
  // Whole milliseconds, as Prometheus stores time; "123456ms" is a valid PromQL duration.
  // Prometheus 2 selects [t - W, t], both ends in: one millisecond less makes the windows of
  // consecutive reads tile (end - W, end] without reading a border sample twice.
  const auto window_ms = std::max(1LL, static_cast<long long>(std::llround(window_s * 1000)) - 1);
  const std::string body = post("/api/v1/query", {{"query", fmt::format("{}[{}ms]", selector, window_ms)},
                                                  {"time", fmt::format("{:.3f}", end)}});
  return parse_query_range_response(body, display_url_ + "/api/v1/query");
}

std::string promql_quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + '"';
}

std::string regex_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::string_view("\\.^$|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace epochcast::fleet
