// The front's framing without sockets (request_framing.hpp): where a request ends, and every
// refusal decided from the head before a body byte is read.
#include "epochcast/net/request_framing.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "epochcast/net/listen_socket.hpp"
#include "epochcast/net/route_request.hpp"

namespace epochcast::net {
namespace {

using ::testing::HasSubstr;
using Step = RequestFramer::Step;

FrontLimits small_limits() {
  FrontLimits l;
  l.max_body_bytes = 1000;
  l.max_head_bytes = 512;
  l.max_headers = 4;
  return l;
}

// Runs the framer over `in` as the loop does (advance again after the head) and returns the step.
Step frame(RequestFramer& f, std::string_view in) {
  Step s = f.advance(in);
  if (s == Step::kHeadDone) s = f.advance(in);
  return s;
}

TEST(RequestFraming, ContentLengthBodyEndsWhereItSays) {
  const FrontLimits limits = small_limits();
  RequestFramer f(limits);
  const std::string req = "POST /v1/detect HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
  EXPECT_EQ(frame(f, req.substr(0, req.size() - 1)), Step::kNeedMore);
  EXPECT_EQ(f.advance(req + "GET / HTTP/1.1\r\n"), Step::kComplete);
  EXPECT_EQ(f.request_end(), req.size());
  EXPECT_EQ(f.head().method, "POST");
  EXPECT_EQ(f.head().target, "/v1/detect");
}

TEST(RequestFraming, OverLimitContentLengthIsRefusedFromTheHead) {
  const FrontLimits limits = small_limits();
  RequestFramer f(limits);
  EXPECT_EQ(frame(f, "POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n"), Step::kRefused);
  EXPECT_EQ(f.refusal().status, 413);
  EXPECT_THAT(f.refusal().message, HasSubstr("--max-body-mb"));
  f.reset();
  EXPECT_EQ(frame(f, "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n"), Step::kRefused);
  EXPECT_EQ(f.refusal().status, 413);
}

TEST(RequestFraming, HeaderCountAndHeadSizeAreCapped) {
  const FrontLimits limits = small_limits();
  RequestFramer f(limits);
  EXPECT_EQ(frame(f, "GET / HTTP/1.1\r\na: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\ne: 5\r\n\r\n"), Step::kRefused);
  EXPECT_EQ(f.refusal().status, 431);
  f.reset();
  // No blank line yet, but already over the head cap: refused without waiting for the rest.
  EXPECT_EQ(frame(f, "GET / HTTP/1.1\r\nX: " + std::string(600, 'a')), Step::kRefused);
  EXPECT_EQ(f.refusal().status, 431);
}

TEST(RequestFraming, ChunkedBodyIsDecodedUnderTheLimit) {
  const FrontLimits limits = small_limits();
  RequestFramer f(limits);
  const std::string req = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: 1\r\n\r\n";
  // Byte by byte: the decoder resumes where it stopped.
  Step s = Step::kNeedMore;
  for (std::size_t n = 1; n <= req.size(); ++n) {
    s = f.advance(std::string_view(req).substr(0, n));
    if (s == Step::kHeadDone) s = f.advance(std::string_view(req).substr(0, n));
    if (n < req.size()) ASSERT_EQ(s, Step::kNeedMore) << n;
  }
  EXPECT_EQ(s, Step::kComplete);
  EXPECT_EQ(f.request_end(), req.size());
  f.reset();
  EXPECT_EQ(frame(f, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n"), Step::kNeedMore);
  f.reset();
  // 1001 bytes announced in two chunks: refused when the second size line arrives.
  EXPECT_EQ(frame(f, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n" + std::string(1000, 'x') +
                         "\r\n1\r\n"),
            Step::kRefused);
  EXPECT_EQ(f.refusal().status, 413);
}

TEST(RequestFraming, ManyTinyChunksAreBounded) {
  FrontLimits limits = small_limits();
  RequestFramer f(limits);
  // 1-byte chunks with long extensions: framing beyond body + 1/8 + slack is refused raw.
  std::string req = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  while (req.size() <= raw_request_limit(limits)) req += "1;" + std::string(900, 'e') + "\r\nx\r\n";
  EXPECT_EQ(frame(f, req), Step::kRefused);
  EXPECT_EQ(f.refusal().status, 413);
}

TEST(RequestFraming, AmbiguousFramingIsRefused) {
  const FrontLimits limits = small_limits();
  for (const std::string head :
       {"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 3x\r\n\r\n", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"}) {
    RequestFramer f(limits);
    EXPECT_EQ(frame(f, head), Step::kRefused) << head;
    EXPECT_EQ(f.refusal().status, 400) << head;
  }
  RequestFramer f(limits);
  EXPECT_EQ(frame(f, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), Step::kRefused);
  EXPECT_EQ(f.refusal().status, 400);
}

TEST(RequestFraming, TokenIsNeededExceptForTheProbeAndOpenPaths) {
  FrontLimits limits = small_limits();
  limits.token = "s3cret";
  limits.open_paths = {"/"};
  HeadInfo h;
  h.method = "POST";
  h.target = "/v1/predict";
  ASSERT_TRUE(admit(h, limits));
  EXPECT_EQ(admit(h, limits)->status, 401);
  h.authorization = "bearer s3cret";
  EXPECT_FALSE(admit(h, limits));
  h.authorization = "Bearer s3cre";
  EXPECT_TRUE(admit(h, limits));
  h = HeadInfo{};
  h.method = "GET";
  h.target = "/healthz";
  EXPECT_FALSE(admit(h, limits));
  h.target = "/";
  EXPECT_FALSE(admit(h, limits));
  EXPECT_FALSE(token_matches("Bearer ", ""));
}

TEST(RequestFraming, ConnectionAnswersPipelinedRequestsInOrder) {
  FrontLimits limits = small_limits();
  limits.healthz_body = "{}";
  int routed = 0;
  const auto route = [&](std::string_view request, bool) {
    ++routed;
    return RoutedAnswer{"HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(request.size()) + "\r\n\r\n", false};
  };
  const std::string a = "POST /a HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi";
  const std::string probe = "GET /healthz HTTP/1.1\r\n\r\n";
  const std::string out = answer_connection(a + probe + a + "GET /b HTTP/1.1\r\n", limits, route);
  EXPECT_EQ(routed, 2);  // the probe is the front's own
  EXPECT_EQ(out.find("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(a.size())), 0U);
  EXPECT_THAT(out, HasSubstr("Connection: keep-alive\r\n\r\n{}"));
  // The write side closed inside the last request.
  EXPECT_THAT(out.substr(out.rfind("HTTP/1.1 ")), HasSubstr("400 Bad Request"));
  // A refusal ends the connection: nothing after it is routed.
  routed = 0;
  const std::string refused =
      answer_connection("POST / HTTP/1.1\r\nContent-Length: 5000\r\n\r\n" + a, limits, route);
  EXPECT_EQ(routed, 0);
  EXPECT_EQ(refused.rfind("HTTP/1.1 413 ", 0), 0U) << refused;
}

TEST(RouteHelpers, LogEscapesAndLoopbackHosts) {
  EXPECT_EQ(escape_for_log("/a\x1b[31m\nb\\"), "/a\\x1b[31m\\x0ab\\x5c");
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("127.9.9.9"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_TRUE(is_loopback_host("::ffff:127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("localhost"));
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
  EXPECT_FALSE(is_loopback_host("10.0.0.1"));
  EXPECT_FALSE(is_loopback_host("::"));
}

}  // namespace
}  // namespace epochcast::net
