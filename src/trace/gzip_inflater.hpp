// Streaming gzip decompression (zlib) for rotated logs (`metrics.log.1.gz`): the compressed
// bytes go in chunk by chunk, text comes out; concatenated members (`cat a.gz b.gz`) are read on.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace epochcast::detail {

inline bool is_gzip(std::string_view head) {
  return head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f && static_cast<unsigned char>(head[1]) == 0x8b;
}

class GzipInflater {
 public:
  // `name` for messages; `max_out` is the most bytes inflated before Error(kIo) (a gzip bomb
  // stops there, not at the end of memory).
  GzipInflater(std::string name, std::uint64_t max_out);
  ~GzipInflater();
  GzipInflater(const GzipInflater&) = delete;
  GzipInflater& operator=(const GzipInflater&) = delete;

  // Inflates `in`, calling sink(data, size) for each piece of output.
  template <typename Sink>
  void feed(std::string_view in, Sink&& sink) {
    std::string_view out;
    while (next(in, out)) sink(out.data(), out.size());
  }
  // End of the compressed input: Error(kParse) when it was cut mid-stream.
  void finish() const;
  [[nodiscard]] std::uint64_t inflated() const { return out_total_; }

 private:
  // One step: consumes from `in`, points `out` at fresh output; false when `in` is used up.
  bool next(std::string_view& in, std::string_view& out);
  struct State;
  std::unique_ptr<State> s_;
  std::string name_;
  std::uint64_t max_out_;
  std::uint64_t out_total_ = 0;
  std::uint64_t in_total_ = 0;
  bool in_member_ = false;
};

}  // namespace epochcast::detail
