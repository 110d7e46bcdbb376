// Whole-file reads of small inputs (model, catalogs) with a size cap, so a huge or endless
// file (/dev/zero, a mistaken path) is a clear error instead of exhausting memory.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace epochcast {

// Reads `path` ("what" names it in messages: "model file"). Error(kIo) when it cannot be
// opened or read; Error(kParse) naming the file when it holds more than max_bytes.
[[nodiscard]] std::string read_file_capped(const std::string& path, std::uint64_t max_bytes, std::string_view what);

}  // namespace epochcast
