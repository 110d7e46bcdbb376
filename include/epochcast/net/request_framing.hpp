// Where one HTTP/1.1 request ends in a connection's bytes, and whether it may be read at all:
// the request head (size and header-count caps, Content-Length, Transfer-Encoding: chunked),
// the body under max_body_bytes for every transfer encoding, decided before the body is read.
// No sockets here: the event loop (http_front.cpp) and the fuzz target (tests/fuzz/fuzz_http)
// frame the same bytes the same way.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "epochcast/net/front_limits.hpp"

namespace epochcast::net {

// An answer the front gives itself (413, 431, 408, 503, 401, 400), from our own words only.
struct Refusal {
  int status = 400;
  std::string code;
  std::string message;
};

// The whole answer for a refusal: JSON error body, Connection: close.
[[nodiscard]] std::string refusal_bytes(const Refusal& r);
// A 413's message when the refusal has none: the limit and the option that sets it.
void fill_refusal_message(Refusal& r, const FrontLimits& limits);

enum class BodyKind { kNone, kLength, kChunked };

// What a request head says about its body and its client.
struct HeadInfo {
  std::string method, target;  // raw client bytes: escape_for_log before logging
  BodyKind body = BodyKind::kNone;
  std::size_t length = 0;
  bool expect_continue = false;
  bool close = false;  // "Connection: close", or HTTP/1.0 without keep-alive
  std::string authorization;
};

// `head` runs up to and including the blank line's CRLF. Sets `info` as far as it got.
[[nodiscard]] std::optional<Refusal> parse_head(std::string_view head, const FrontLimits& limits, HeadInfo& info);

// Raw request bytes one connection may hold: head + body + chunk framing of up to 1/8 of it.
[[nodiscard]] std::size_t raw_request_limit(const FrontLimits& limits);

// The request's own refusals before routing: 401 without the token (GET /healthz and the open
// paths excepted).
[[nodiscard]] std::optional<Refusal> admit(const HeadInfo& head, const FrontLimits& limits);
// True for a request the front answers itself with limits.healthz_body.
[[nodiscard]] bool is_front_healthz(const HeadInfo& head, const FrontLimits& limits);
// The 200 the front gives for GET /healthz.
[[nodiscard]] std::string healthz_bytes(const FrontLimits& limits, bool close);

// Frames one request at a time over the bytes of a connection, from the first byte of the
// current request on; call advance() again after more bytes arrive. Resumable: a chunked body
// is scanned once however it arrives.
class RequestFramer {
 public:
  enum class Step {
    kNeedMore,  // incomplete: read more (and check the deadlines)
    kHeadDone,  // the head just completed: head() is valid; apply policy, then advance() again
    kComplete,  // request_end() bytes are one whole request
    kRefused,   // refusal() says why; the connection answers it and closes
  };

  explicit RequestFramer(const FrontLimits& limits) : limits_(&limits) {}
  // Frames the next request (its bytes now start at offset 0).
  void reset();
  [[nodiscard]] Step advance(std::string_view in);

  [[nodiscard]] bool head_done() const { return head_end_ != 0; }
  [[nodiscard]] const HeadInfo& head() const { return head_; }
  [[nodiscard]] std::size_t head_end() const { return head_end_; }
  [[nodiscard]] std::size_t request_end() const { return request_end_; }
  [[nodiscard]] const Refusal& refusal() const { return refusal_; }

 private:
  enum class Chunk { kSize, kData, kDataEnd, kTrailer };
  Step refuse(int status, std::string code, std::string message);
  Step advance_chunked(std::string_view in);

  const FrontLimits* limits_;
  HeadInfo head_;
  Refusal refusal_;
  bool head_reported_ = false;
  std::size_t head_end_ = 0;     // past the blank line; 0 while the head is incomplete
  std::size_t request_end_ = 0;  // past the body; 0 while incomplete
  Chunk chunk_ = Chunk::kSize;
  std::size_t scan_ = 0;  // chunked: parse position
  std::size_t chunk_left_ = 0;
  std::size_t decoded_ = 0;
  std::size_t trailers_ = 0;
};

// The front's answers to `bytes` sent as one connection whose write side then closes, with no
// socket: framed and refused as the event loop does, each complete request answered by
// `route` (given the request and whether its answer must say Connection: close; it returns the
// answer bytes and whether the connection closes after it). For the
// fuzz target and tests; the per-server budgets (queue, buffered bytes, connections) and the
// deadlines do not apply to one string.
struct RoutedAnswer {
  std::string bytes;
  bool close = false;
};
[[nodiscard]] std::string answer_connection(std::string_view bytes, const FrontLimits& limits,
                                            const std::function<RoutedAnswer(std::string_view request, bool close)>& route);

}  // namespace epochcast::net
