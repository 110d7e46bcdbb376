// For the install tests (install_test.cpp, tests/bookworm): a temporary folder of their own and
// the .deb that cpack makes from the build (cmake/install.cmake).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "cli_run.hpp"

namespace epochcast::testing {

struct InstallTempDir {
  std::filesystem::path path;
  InstallTempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "epochcast-install-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~InstallTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// Packs the build's .deb into `dir`; its path, or empty with cpack's output in `log`.
inline std::filesystem::path pack_deb(const std::filesystem::path& dir, std::string& log) {
  const auto pack = run_command("cd " + dir.string() + " && cpack -G DEB --config " +
                                std::string(EPOCHCAST_BINARY_DIR) + "/CPackConfig.cmake -B " + dir.string() + " 2>&1");
  log = pack.out;
  if (pack.status != 0) return {};
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".deb") return e.path();
  return {};
}

}  // namespace epochcast::testing
