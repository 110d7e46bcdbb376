// The web page's front end (web/*), compiled into the binary (cmake/embed_web.cmake), and the
// routes that serve it: GET / (upload a trace, see the report), GET /fleet, GET /static/NAME.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace httplib {
class Server;
struct Response;
}

namespace epochcast::server {

struct WebAsset {
  std::string_view name;          // file name under web/: "index.html", "upload.js"
  std::string_view content_type;  // "text/javascript; charset=utf-8"
  std::string_view body;
};

// Every file of web/, sorted by name (generated web_assets.cpp).
[[nodiscard]] const std::vector<WebAsset>& web_assets();
// The asset named `name`, or nullptr.
[[nodiscard]] const WebAsset* find_web_asset(std::string_view name);

// The paths the page routes answer (for a token check that lets the page itself load: it
// carries no data; the data endpoints it calls still need the token).
[[nodiscard]] std::vector<std::string> web_page_paths();

// Answers `name` (a web/ file) with its type and the page's security headers; false when
// there is no such file.
bool send_web_asset(std::string_view name, httplib::Response& res);

// GET /fleet and GET /static/NAME on `server`. GET / is the caller's: it chooses between the
// page and a JSON index by the Accept header (http_api.cpp, page_or_index).
void add_web_routes(httplib::Server& server);

}  // namespace epochcast::server
