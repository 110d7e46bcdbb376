#include "epochcast/core/read_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "epochcast/core/error.hpp"

namespace epochcast {

std::string read_file_capped(const std::string& path, std::uint64_t max_bytes, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, fmt::format("cannot open {} '{}': {}", what, path, std::strerror(errno)));
  // A folder opens as a stream and fails only at the first read, without a reason.
  if (std::error_code ec; std::filesystem::is_directory(path, ec))
    throw Error(ErrorCode::kIo, fmt::format("cannot read {} '{}': it is a folder", what, path));
  std::string out;
  // Chunks, not the file size: pipes and devices have none.
  constexpr std::size_t kChunk = 1 << 20;
  while (in) {
    const std::size_t have = out.size();
    out.resize(have + kChunk);
    in.read(out.data() + have, static_cast<std::streamsize>(kChunk));
    out.resize(have + static_cast<std::size_t>(in.gcount()));
    if (out.size() > max_bytes)
      throw Error(ErrorCode::kParse,
                  fmt::format("{} is larger than {} MiB: not a {}", what, max_bytes >> 20, what),
                  {path, 0, 0, ""});
  }
  if (in.bad()) throw Error(ErrorCode::kIo, fmt::format("read error in {} '{}'", what, path));
  return out;
}

}  // namespace epochcast
