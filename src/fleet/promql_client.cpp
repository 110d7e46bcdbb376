#include "promql_client.hpp"

#include <httplib.h>

#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "epochcast/collect/promql_endpoint.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/core/text.hpp"
#include "epochcast/fleet/watch.hpp"

namespace epochcast::fleet {

PromClient::PromClient(const std::string& url, double timeout_s) : timeout_s_(timeout_s) {
  const PromqlEndpoint endpoint = parse_promql_endpoint(url);
  display_url_ = endpoint.display_url;
  path_prefix_ = endpoint.path_prefix;
  while (display_url_.size() > 1 && display_url_.back() == '/') display_url_.pop_back();
  client_ = std::make_unique<httplib::Client>(endpoint.scheme_host_port);
  const auto whole = static_cast<time_t>(std::floor(timeout_s));
  const auto micro = static_cast<time_t>((timeout_s - static_cast<double>(whole)) * 1e6);
  client_->set_connection_timeout(whole, micro);
  client_->set_read_timeout(whole, micro);
  client_->set_write_timeout(whole, micro);
  if (!endpoint.user.empty()) client_->set_basic_auth(endpoint.user, endpoint.password);
}

PromClient::~PromClient() = default;

std::string PromClient::post(const std::string& endpoint, const std::multimap<std::string, std::string>& form) {
  ++requests_;
  const std::string where = display_url_ + endpoint;
  httplib::Params params(form.begin(), form.end());
  auto res = client_->Post(path_prefix_ + endpoint, params);
  if (!res) throw promql_transport_error("PromQL endpoint " + where, res.error(), timeout_s_);
  if (res->status != 200)
    throw Error(ErrorCode::kRemote, fmt::format("PromQL endpoint {} refused the request: {}", where,
                                                promql_refusal_detail(res->status, res->body)));
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
                                                where, e.what(), text::printable(body, 80)));
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
