#include "epochcast/core/listen_address.hpp"

#include <fmt/format.h>

#include <charconv>

#include "epochcast/core/error.hpp"

namespace epochcast {

ListenAddress parse_listen_address(const std::string& address, const std::string& default_host) {
  constexpr int kMaxPort = 65535;
  ListenAddress out{default_host, -1};
  std::string port_text = address;
  if (const auto colon = address.rfind(':'); colon != std::string::npos) {
    if (colon > 0) out.host = address.substr(0, colon);
    port_text = address.substr(colon + 1);
  }
  if (out.host.size() > 2 && out.host.front() == '[' && out.host.back() == ']')
    out.host = out.host.substr(1, out.host.size() - 2);
  const char* end = port_text.data() + port_text.size();
  const auto [ptr, ec] = std::from_chars(port_text.data(), end, out.port);
  if (port_text.empty() || ec != std::errc() || ptr != end || out.port < 0 || out.port > kMaxPort)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--listen '{}': expected HOST:PORT, :PORT or PORT (0 picks a free port)", address));
  return out;
}

}  // namespace epochcast
