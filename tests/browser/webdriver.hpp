// A W3C WebDriver client over cpp-httplib, enough to drive headless Chromium through Debian's
// chromedriver (/usr/bin/chromedriver, package chromium-driver): open a page, find elements,
// type a file path into a file input, click, read text, run a script, take a screenshot.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "../integration/collect_process.hpp"

namespace epochcast::testing {

constexpr const char* kChromedriver = "/usr/bin/chromedriver";
constexpr const char* kChromiumBinary = "/usr/bin/chromium";
// The key W3C WebDriver gives an element reference.
constexpr const char* kElementKey = "element-6066-11e4-a52e-4f735466cecf";

inline bool browser_available() {
  return std::filesystem::exists(kChromedriver) && std::filesystem::exists(kChromiumBinary);
}

inline std::string base64_decode(const std::string& in) {
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (const unsigned char ch : in) {
    int v = -1;
    if (ch >= 'A' && ch <= 'Z') v = ch - 'A';
    else if (ch >= 'a' && ch <= 'z') v = ch - 'a' + 26;
    else if (ch >= '0' && ch <= '9') v = ch - '0' + 52;
    else if (ch == '+') v = 62;
    else if (ch == '/') v = 63;
    if (v < 0) continue;  // '=' padding, line breaks
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xFF);
    }
  }
  return out;
}

class WebDriver {
 public:
  // Starts chromedriver on a free port and a headless Chromium session with a fresh profile.
  explicit WebDriver(const fs::path& dir, int width = 1280, int height = 1600) : dir_(dir) {
    port_ = free_port();
    driver_ = std::make_unique<Process>(
        std::vector<std::string>{kChromedriver, "--port=" + std::to_string(port_)}, EnvVars{}, dir);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (true) {
      httplib::Client c("127.0.0.1", port_);
      if (auto r = c.Get("/status"); r && r->status == 200) break;
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("chromedriver did not start: " + driver_->err());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const nlohmann::json args = {"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                                 "--disable-dev-shm-usage", "--user-data-dir=" + (dir / "profile").string(),
                                 "--window-size=" + std::to_string(width) + "," + std::to_string(height)};
    const nlohmann::json caps = {
        {"capabilities",
         {{"alwaysMatch",
           {{"browserName", "chrome"},
            {"goog:chromeOptions", {{"binary", kChromiumBinary}, {"args", args}}}}}}}};
    const nlohmann::json session = call("POST", "/session", caps);
    session_ = session.at("sessionId").get<std::string>();
  }
  ~WebDriver() {
    if (!session_.empty()) {
      try {
        call("DELETE", "/session/" + session_, nullptr);
      } catch (const std::exception&) {  // the driver's SIGKILL below ends the browser anyway
      }
    }
  }
  WebDriver(const WebDriver&) = delete;
  WebDriver& operator=(const WebDriver&) = delete;

  void go(const std::string& url) { session_call("POST", "/url", {{"url", url}}); }

  // The first element matching a CSS selector, or nullopt.
  std::optional<std::string> find(const std::string& css) {
    try {
      const auto v = session_call("POST", "/element", {{"using", "css selector"}, {"value", css}});
      return v.at(kElementKey).get<std::string>();
    } catch (const std::runtime_error&) {
      return std::nullopt;
    }
  }
  // Polls for the element until timeout_s; throws when it never comes.
  std::string wait_for(const std::string& css, double timeout_s = 20) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (true) {
      if (auto e = find(css)) return *e;
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("no element " + css + " on the page");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  // Types into an element; for <input type=file> the text is the local file's path.
  void send_keys(const std::string& element, const std::string& text) {
    session_call("POST", "/element/" + element + "/value", {{"text", text}});
  }
  void click(const std::string& element) { session_call("POST", "/element/" + element + "/click", nlohmann::json::object()); }
  std::string text(const std::string& element) {
    return session_call("GET", "/element/" + element + "/text", nullptr).get<std::string>();
  }
  // Runs `script` (a function body; `arguments` holds args) in the page; its return value.
  nlohmann::json script(const std::string& script, const nlohmann::json& args = nlohmann::json::array()) {
    return session_call("POST", "/execute/sync", {{"script", script}, {"args", args}});
  }
  // Into the frame `element` (an <iframe>), or back to the page with nullopt.
  void frame(const std::optional<std::string>& element) {
    session_call("POST", "/frame",
                 {{"id", element ? nlohmann::json{{kElementKey, *element}} : nlohmann::json(nullptr)}});
  }
  // The viewport as PNG bytes.
  std::string screenshot_png() {
    const std::string b64 = session_call("GET", "/screenshot", nullptr).get<std::string>();
    return base64_decode(b64);
  }

 private:
  nlohmann::json session_call(const std::string& method, const std::string& path, const nlohmann::json& body) {
    return call(method, "/session/" + session_ + path, body);
  }
  nlohmann::json call(const std::string& method, const std::string& path, const nlohmann::json& body) {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    httplib::Result r = method == "GET"      ? c.Get(path.c_str())
                        : method == "DELETE" ? c.Delete(path.c_str())
                                             : c.Post(path.c_str(), body.dump(), "application/json");
    if (!r) throw std::runtime_error("chromedriver: no answer to " + method + " " + path);
    const auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (j.is_discarded()) throw std::runtime_error("chromedriver: not JSON: " + r->body.substr(0, 300));
    if (r->status != 200) throw std::runtime_error("chromedriver " + method + " " + path + ": " + j.dump().substr(0, 600));
    return j.value("value", nlohmann::json());
  }

  fs::path dir_;
  int port_ = 0;
  std::unique_ptr<Process> driver_;
  std::string session_;
};

}  // namespace epochcast::testing
