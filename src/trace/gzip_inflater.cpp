#include "gzip_inflater.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "epochcast/core/error.hpp"

namespace epochcast::detail {

namespace {
constexpr std::size_t kOutChunk = 1 << 18;  // 256 KiB of text per step: a few thousand lines
constexpr int kGzipWindow = 15 + 16;        // zlib: 32 KiB window, gzip header and trailer
}  // namespace

struct GzipInflater::State {
  z_stream z{};
  char out[kOutChunk];
  bool ready = false;
};

GzipInflater::GzipInflater(std::string name, std::uint64_t max_out)
    : s_(std::make_unique<State>()), name_(std::move(name)), max_out_(max_out) {
  if (inflateInit2(&s_->z, kGzipWindow) != Z_OK)
    throw Error(ErrorCode::kInternal, fmt::format("{}: zlib could not start inflating", name_));
  s_->ready = true;
}

GzipInflater::~GzipInflater() {
  if (s_ && s_->ready) inflateEnd(&s_->z);
}

bool GzipInflater::next(std::string_view& in, std::string_view& out) {
  z_stream& z = s_->z;
  if (in.empty()) return false;
  if (!in_member_) {
    // Between members only zero padding (as some rotators write) may appear, or a new header.
    std::size_t skip = 0;
    while (skip < in.size() && in[skip] == 0) ++skip;
    in.remove_prefix(skip);
    in_total_ += skip;
    if (in.empty()) return false;
    in_member_ = true;
  }
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(std::min<std::size_t>(in.size(), 1u << 30));
  z.next_out = reinterpret_cast<Bytef*>(s_->out);
  z.avail_out = kOutChunk;
  const int rc = inflate(&z, Z_NO_FLUSH);
  const std::size_t used = static_cast<std::size_t>(z.next_in - reinterpret_cast<const Bytef*>(in.data()));
  in.remove_prefix(used);
  in_total_ += used;
  const std::size_t produced = kOutChunk - z.avail_out;
  if (rc == Z_STREAM_END) {
    inflateReset(&z);
    in_member_ = false;
  } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
    throw Error(ErrorCode::kParse,
                fmt::format("not a valid gzip stream ({}) after {} compressed bytes", z.msg ? z.msg : "zlib error",
                            in_total_),
                SourceLocation{name_, 0, 0, "(gzip)"});
  }
  if (used == 0 && produced == 0 && rc != Z_STREAM_END)
    throw Error(ErrorCode::kParse, fmt::format("gzip stream stalled after {} compressed bytes", in_total_),
                SourceLocation{name_, 0, 0, "(gzip)"});
  out_total_ += produced;
  if (out_total_ > max_out_)
    throw Error(ErrorCode::kIo,
                fmt::format("{}: expands past {} bytes when decompressed ({} compressed bytes read): a gzip bomb, or a "
                            "log larger than a trace epochcast reads whole; raise EPOCHCAST_MAX_STREAM_BYTES to read on",
                            name_, max_out_, in_total_));
  out = std::string_view(s_->out, produced);
  return produced > 0 || !in.empty();
}

void GzipInflater::finish() const {
  if (in_member_)
    throw Error(ErrorCode::kParse,
                fmt::format("the gzip stream ends mid-member after {} compressed bytes (a copy cut short?); "
                            "the {} bytes inflated so far were not read",
                            in_total_, out_total_),
                SourceLocation{name_, 0, 0, "(gzip)"});
}

}  // namespace epochcast::detail
