#include "epochcast/net/request_framing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "epochcast/net/route_request.hpp"

namespace epochcast::net {

// Named, not anonymous: the unity build puts this library's files in one translation unit.
namespace framing {

// A chunk-size line ("1a2b;ext=...\r\n") longer than this is not a client we want.
constexpr std::size_t kMaxChunkLine = 1024;
// Chunk framing allowed on top of the decoded body limit in raw bytes (1/8 of it + this), so a
// body of many tiny chunks is bounded too (FramingTest.ManyTinyChunksAreBounded).
constexpr std::size_t kFramingSlack = 65536;

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string status_text(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

// Our own messages only (no client bytes), so escaping quote and backslash is enough.
std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  }
  return out + "\"";
}

}  // namespace framing

std::string refusal_bytes(const Refusal& r) {
  const std::string body = fmt::format("{{\"error\": {{\"code\": {}, \"message\": {}}}}}\n",
                                       framing::json_string(r.code), framing::json_string(r.message));
  std::string extra;
  if (r.status == 503) extra = "Retry-After: 1\r\n";
  if (r.status == 401) extra = "WWW-Authenticate: Bearer\r\n";
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n{}",
      r.status, framing::status_text(r.status), body.size(), extra, body);
}

void fill_refusal_message(Refusal& r, const FrontLimits& limits) {
  if (r.status == 413 && r.message.empty())
    r.message = fmt::format("upload larger than this server's limit of {} MiB ({})", limits.max_body_bytes >> 20,
                            limits.option_hint_body);
}

std::optional<Refusal> parse_head(std::string_view head, const FrontLimits& limits, HeadInfo& info) {
  using framing::iequals;
  std::size_t pos = head.find("\r\n");
  const std::string_view request_line = head.substr(0, pos);
  const std::size_t sp1 = request_line.find(' ');
  if (sp1 != std::string_view::npos) {
    info.method = std::string(request_line.substr(0, sp1));
    const std::size_t sp2 = request_line.find(' ', sp1 + 1);
    info.target = std::string(request_line.substr(sp1 + 1, sp2 == std::string_view::npos ? sp2 : sp2 - sp1 - 1));
  }
  pos = pos == std::string_view::npos ? head.size() : pos + 2;
  std::size_t count = 0;
  bool have_length = false, have_chunked = false;
  std::string_view connection;
  while (pos < head.size()) {
    const std::size_t eol = head.find("\r\n", pos);
    const std::string_view line = head.substr(pos, eol - pos);
    pos = eol == std::string_view::npos ? head.size() : eol + 2;
    if (line.empty()) break;
    if (++count > limits.max_headers)
      return Refusal{431, "invalid_argument", fmt::format("more than {} header lines", limits.max_headers)};
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;  // httplib's parser answers 400 for these
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = framing::trim(line.substr(colon + 1));
    if (iequals(name, "Content-Length")) {
      std::size_t n = 0;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec == std::errc::result_out_of_range ||
          (ec == std::errc() && ptr == value.data() + value.size() && n > limits.max_body_bytes))
        return Refusal{413, "invalid_argument", ""};
      if (value.empty() || ec != std::errc() || ptr != value.data() + value.size() || (have_length && n != info.length))
        return Refusal{400, "invalid_argument", "malformed or repeated Content-Length"};
      have_length = true;
      info.length = n;
    } else if (iequals(name, "Transfer-Encoding")) {
      // Only "chunked" is read; anything else has no length we can bound.
      if (!iequals(value, "chunked"))
        return Refusal{400, "invalid_argument", "Transfer-Encoding other than chunked is not accepted"};
      have_chunked = true;
    } else if (iequals(name, "Expect")) {
      info.expect_continue = iequals(value, "100-continue");
    } else if (iequals(name, "Authorization")) {
      info.authorization = std::string(value);
    } else if (iequals(name, "Connection")) {
      connection = value;
    }
  }
  const bool http10 = request_line.size() >= 8 && request_line.substr(request_line.size() - 8) == "HTTP/1.0";
  info.close = iequals(connection, "close") || (http10 && !iequals(connection, "keep-alive"));
  // Both framings at once is how requests are smuggled past proxies (RFC 9112 6.3).
  if (have_length && have_chunked)
    return Refusal{400, "invalid_argument", "both Content-Length and Transfer-Encoding: chunked"};
  info.body = have_chunked ? BodyKind::kChunked : have_length && info.length > 0 ? BodyKind::kLength : BodyKind::kNone;
  return std::nullopt;
}

std::size_t raw_request_limit(const FrontLimits& limits) {
  return limits.max_head_bytes + limits.max_body_bytes + limits.max_body_bytes / 8 + framing::kFramingSlack;
}

std::optional<Refusal> admit(const HeadInfo& head, const FrontLimits& limits) {
  if (limits.token.empty()) return std::nullopt;
  const bool open = head.method == "GET" &&
                    (head.target == "/healthz" ||
                     std::find(limits.open_paths.begin(), limits.open_paths.end(), head.target) != limits.open_paths.end());
  if (open || token_matches(head.authorization, limits.token)) return std::nullopt;
  return Refusal{401, "invalid_argument", "this server needs Authorization: Bearer TOKEN (serve --token)"};
}

bool is_front_healthz(const HeadInfo& head, const FrontLimits& limits) {
  return !limits.healthz_body.empty() && head.body == BodyKind::kNone && head.method == "GET" &&
         head.target == "/healthz";
}

std::string healthz_bytes(const FrontLimits& limits, bool close) {
  return fmt::format("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: {}\r\n\r\n{}",
                     limits.healthz_body.size(), close ? "close" : "keep-alive", limits.healthz_body);
}

void RequestFramer::reset() {
  head_ = HeadInfo{};
  refusal_ = Refusal{};
  head_reported_ = false;
  head_end_ = request_end_ = 0;
  chunk_ = Chunk::kSize;
  scan_ = chunk_left_ = decoded_ = trailers_ = 0;
}

RequestFramer::Step RequestFramer::refuse(int status, std::string code, std::string message) {
  refusal_ = Refusal{status, std::move(code), std::move(message)};
  fill_refusal_message(refusal_, *limits_);
  return Step::kRefused;
}

RequestFramer::Step RequestFramer::advance(std::string_view in) {
  const FrontLimits& limits = *limits_;
  if (request_end_ != 0) return Step::kComplete;
  if (in.size() > raw_request_limit(limits)) return refuse(413, "invalid_argument", "");
  if (head_end_ == 0) {
    const std::size_t end = in.find("\r\n\r\n");
    if (end == std::string_view::npos && in.size() <= limits.max_head_bytes) return Step::kNeedMore;
    if (end == std::string_view::npos || end + 4 > limits.max_head_bytes)
      return refuse(431, "invalid_argument", fmt::format("request head over {} KiB", limits.max_head_bytes >> 10));
    head_end_ = end + 4;
    if (auto refusal = parse_head(in.substr(0, head_end_), limits, head_)) {
      refusal_ = std::move(*refusal);
      fill_refusal_message(refusal_, limits);
      return Step::kRefused;
    }
    scan_ = head_end_;
  }
  if (!head_reported_) {
    head_reported_ = true;
    return Step::kHeadDone;
  }
  switch (head_.body) {
    case BodyKind::kNone:
      request_end_ = head_end_;
      break;
    case BodyKind::kLength:
      if (in.size() - head_end_ >= head_.length) request_end_ = head_end_ + head_.length;
      break;
    case BodyKind::kChunked:
      if (const Step s = advance_chunked(in); s == Step::kRefused) return s;
      break;
  }
  return request_end_ != 0 ? Step::kComplete : Step::kNeedMore;
}

RequestFramer::Step RequestFramer::advance_chunked(std::string_view in) {
  const FrontLimits& limits = *limits_;
  for (;;) {
    switch (chunk_) {
      case Chunk::kSize:
      case Chunk::kTrailer: {
        const std::size_t eol = in.find("\r\n", scan_);
        if (eol == std::string_view::npos) {
          if (in.size() - scan_ > framing::kMaxChunkLine) return refuse(400, "invalid_argument", "chunk line too long");
          return Step::kNeedMore;
        }
        const std::string_view line = in.substr(scan_, eol - scan_);
        scan_ = eol + 2;
        if (chunk_ == Chunk::kTrailer) {
          if (line.empty()) {
            request_end_ = scan_;
            return Step::kComplete;
          }
          if (++trailers_ > limits.max_headers) return refuse(431, "invalid_argument", "too many trailer lines");
          continue;
        }
        const std::string_view size_text = framing::trim(line.substr(0, line.find(';')));
        std::size_t size = 0;
        const auto [ptr, ec] = std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
        if (ec == std::errc::result_out_of_range ||
            (ec == std::errc() && size > limits.max_body_bytes - std::min(decoded_, limits.max_body_bytes)))
          return refuse(413, "invalid_argument", "");
        if (size_text.empty() || ec != std::errc() || ptr != size_text.data() + size_text.size())
          return refuse(400, "invalid_argument", "malformed chunk size");
        decoded_ += size;
        chunk_left_ = size;
        chunk_ = size == 0 ? Chunk::kTrailer : Chunk::kData;
        break;
      }
      case Chunk::kData: {
        const std::size_t take = std::min(chunk_left_, in.size() - scan_);
        scan_ += take;
        chunk_left_ -= take;
        if (chunk_left_ != 0) return Step::kNeedMore;
        chunk_ = Chunk::kDataEnd;
        break;
      }
      case Chunk::kDataEnd:
        if (in.size() - scan_ < 2) return Step::kNeedMore;
        if (in.compare(scan_, 2, "\r\n") != 0) return refuse(400, "invalid_argument", "chunk data not followed by CRLF");
        scan_ += 2;
        chunk_ = Chunk::kSize;
        break;
    }
  }
}

std::string answer_connection(std::string_view bytes, const FrontLimits& limits,
                              const std::function<RoutedAnswer(std::string_view request, bool close)>& route) {
  std::string out;
  RequestFramer framer(limits);
  std::size_t served = 0;
  while (!bytes.empty()) {
    framer.reset();
    RequestFramer::Step step = framer.advance(bytes);
    if (step == RequestFramer::Step::kHeadDone) {
      const HeadInfo& head = framer.head();
      if (auto refusal = admit(head, limits)) return out + refusal_bytes(*refusal);
      if (is_front_healthz(head, limits)) {
        const bool close = ++served >= limits.max_requests_per_connection || head.close;
        out += healthz_bytes(limits, close);
        if (close) return out;
        bytes.remove_prefix(framer.head_end());
        continue;
      }
      step = framer.advance(bytes);
    }
    if (step == RequestFramer::Step::kRefused) return out + refusal_bytes(framer.refusal());
    if (step == RequestFramer::Step::kNeedMore)  // the write side closed inside a request
      return out + refusal_bytes({400, "invalid_argument", "the connection ended inside a request"});
    const bool close = ++served >= limits.max_requests_per_connection;
    RoutedAnswer answer = route(bytes.substr(0, framer.request_end()), close);
    out += answer.bytes;
    if (close || answer.close || answer.bytes.empty()) return out;
    bytes.remove_prefix(framer.request_end());
  }
  return out;
}

}  // namespace epochcast::net
