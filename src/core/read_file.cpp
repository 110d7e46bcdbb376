#include "epochcast/core/read_file.hpp"

#include <fmt/format.h>

#include <sys/stat.h>

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
  // A device is no file to read whole: /dev/zero was read for its 256 MiB before failing.
  // FIFOs (`<(…)`) stay welcome; a regular file's size is known before reading it.
  if (struct stat st {}; ::stat(path.c_str(), &st) == 0) {
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode))
      throw Error(ErrorCode::kIo, fmt::format("cannot read {} '{}': it is a {}, not a file", what, path,
                                              S_ISCHR(st.st_mode) ? "character device"
                                              : S_ISBLK(st.st_mode) ? "block device" : "socket"));
    if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > max_bytes)
      throw Error(ErrorCode::kParse,
                  fmt::format("{} is larger than {} MiB ({} bytes): not a {}", what, max_bytes >> 20,
                              static_cast<long long>(st.st_size), what),
                  {path, 0, 0, ""});
  }
  errno = 0;
  std::string out;
  // Chunks, not the file size: pipes and devices have none.
  constexpr std::size_t kChunk = 1 << 20;
  while (in) {
    const std::size_t have = out.size();
    out.resize(have + kChunk);
    in.read(out.data() + have, static_cast<std::streamsize>(kChunk));
    out.resize(have + static_cast<std::size_t>(in.gcount()));
    // Models and catalogs are text: a zero byte ends the read at once (an endless pipe of them too).
    if (const void* nul = std::memchr(out.data() + have, 0, out.size() - have))
      throw Error(ErrorCode::kParse,
                  fmt::format("binary data (a zero byte at offset {}): not a {}", static_cast<const char*>(nul) - out.data(),
                              what),
                  {path, 0, 0, ""});
    if (out.size() > max_bytes)
      throw Error(ErrorCode::kParse,
                  fmt::format("{} is larger than {} MiB: not a {}", what, max_bytes >> 20, what),
                  {path, 0, 0, ""});
  }
  if (in.bad())
    throw Error(ErrorCode::kIo, fmt::format("read error in {} '{}'{}{}", what, path, errno ? ": " : "",
                                            errno ? std::strerror(errno) : ""));
  return out;
}

}  // namespace epochcast
