#include <httplib.h>

#include <algorithm>

#include "web_assets.hpp"

namespace epochcast::server {

namespace {

// The page and its scripts come from this server only; the report is shown in a frame made
// from its text (srcdoc), with its own inline style; nothing is fetched from elsewhere.
constexpr const char* kPagePolicy =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "frame-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'";

void send_asset(const WebAsset& asset, httplib::Response& res) {
  res.status = 200;
  res.set_header("Content-Security-Policy", kPagePolicy);
  res.set_header("X-Content-Type-Options", "nosniff");
  // Embedded in the binary: a new build may change them, so the browser asks again.
  res.set_header("Cache-Control", "no-cache");
  res.set_content(std::string(asset.body), std::string(asset.content_type));
}

}  // namespace

const WebAsset* find_web_asset(std::string_view name) {
  const auto& assets = web_assets();
  const auto it = std::find_if(assets.begin(), assets.end(), [&](const WebAsset& a) { return a.name == name; });
  return it == assets.end() ? nullptr : &*it;
}

std::vector<std::string> web_page_paths() {
  std::vector<std::string> paths = {"/", "/fleet"};
  for (const auto& a : web_assets()) paths.push_back("/static/" + std::string(a.name));
  return paths;
}

bool send_web_asset(std::string_view name, httplib::Response& res) {
  const WebAsset* asset = find_web_asset(name);
  if (!asset) return false;
  send_asset(*asset, res);
  return true;
}

void add_web_routes(httplib::Server& server) {
  server.Get("/fleet", [](const httplib::Request&, httplib::Response& res) { send_web_asset("fleet.html", res); });
  // Only names of web/: no path is ever joined to a folder, so "../" has nothing to reach.
  server.Get(R"(/static/([A-Za-z0-9_.-]+))", [](const httplib::Request& req, httplib::Response& res) {
    if (!send_web_asset(req.matches[1].str(), res)) res.status = 404;  // the error handler words it
  });
}

}  // namespace epochcast::server
