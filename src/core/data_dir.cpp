#include "epochcast/core/data_dir.hpp"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace epochcast {

namespace {

// PREFIX/share/epochcast for PREFIX/bin/epochcast, when it holds the GPU catalog.
std::string beside_binary() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const std::filesystem::path share = exe.parent_path().parent_path() / "share" / "epochcast";
  if (std::filesystem::is_regular_file(share / "gpus.csv", ec)) return share.string();
  return {};
}

}  // namespace

std::string data_dir() {
  if (const char* dir = std::getenv("EPOCHCAST_DATA_DIR"); dir && *dir) return dir;
  static const std::string installed = beside_binary();
  if (!installed.empty()) return installed;
  return EPOCHCAST_DATA_DIR;
}

}  // namespace epochcast
