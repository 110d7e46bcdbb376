// --shard i/n: which GPUs this watch process reads.
#include <fmt/format.h>

#include <charconv>

#include "epochcast/fleet/watch.hpp"

namespace epochcast::fleet {

namespace {
// More shards than this would leave most empty on any real fleet; it also bounds the parse.
constexpr int kMaxShards = 4096;

bool parse_int(std::string_view text, int& out) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && !text.empty();
}
}  // namespace

Shard parse_shard(std::string_view text) {
  const auto slash = text.find('/');
  Shard s;
  if (slash == std::string_view::npos || !parse_int(text.substr(0, slash), s.index) ||
      !parse_int(text.substr(slash + 1), s.count))
    throw FieldError("shard", fmt::format("must be i/n (e.g. 1/2), got '{}'", text));
  if (s.count < 1 || s.count > kMaxShards || s.index < 1 || s.index > s.count)
    throw FieldError("shard", fmt::format("must be i/n with 1 <= i <= n <= {}, got '{}'", kMaxShards, text));
  return s;
}

std::uint64_t stable_hash(std::string_view text) {
  std::uint64_t h = 14695981039346656037ULL;  // FNV-1a 64
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

bool in_shard(std::string_view uuid, const Shard& shard) {
  return stable_hash(uuid) % static_cast<std::uint64_t>(shard.count) == static_cast<std::uint64_t>(shard.index - 1);
}

}  // namespace epochcast::fleet
