#include "epochcast/core/listen_address.hpp"

#include <gtest/gtest.h>

#include <string>

#include "epochcast/core/error.hpp"

namespace epochcast {
namespace {

// The one --listen parser of `collect --listen` and `serve --listen`.
TEST(ListenAddress, HostPortFormsAndRefusals) {
  auto a = parse_listen_address("127.0.0.1:9400", "0.0.0.0");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 9400);
  a = parse_listen_address(":0", "127.0.0.1");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 0);
  a = parse_listen_address("8080", "0.0.0.0");
  EXPECT_EQ(a.host, "0.0.0.0");
  EXPECT_EQ(a.port, 8080);
  a = parse_listen_address("[::1]:65535", "0.0.0.0");
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.port, 65535);
  for (const char* bad : {"", "host:", "host:65536", "host:-1", "host:80x", "host: 80", "notaport"}) {
    try {
      (void)parse_listen_address(bad, "0.0.0.0");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << bad;
      EXPECT_NE(std::string(e.what()).find("--listen '" + std::string(bad) + "'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace epochcast
