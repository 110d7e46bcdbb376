// The .deb in a clean Debian 12 root (issue 19): label `bookworm`, its own binary for its longer
// time limit (debootstrap fetches a base system from the mirror).
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "../integration/deb_package.hpp"

namespace epochcast {
namespace {

namespace fs = std::filesystem;
using testing::run_command;
using TempDir = testing::InstallTempDir;

// The .deb in a fresh Debian 12 root made by debootstrap: its Depends are fetched into the root,
// then it is installed and predicts with no network (scripts/check-deb-bookworm.sh). Needs root,
// debootstrap and the Debian mirror, as scripts/install-deps.sh does; ~2–4 min.
TEST(Install, DebianPackageInstallsAndRunsInAFreshBookwormRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (debootstrap, chroot, mount)";
  if (run_command("command -v debootstrap >/dev/null && command -v dpkg-shlibdeps >/dev/null").status != 0)
    GTEST_SKIP() << "debootstrap / dpkg-dev not installed (scripts/install-deps.sh installs them)";
  TempDir tmp;
  std::string pack_log;
  const fs::path deb = testing::pack_deb(tmp.path, pack_log);
  ASSERT_FALSE(deb.empty()) << pack_log;
  const auto check = run_command(std::string(EPOCHCAST_SOURCE_DIR) + "/scripts/check-deb-bookworm.sh " + deb.string() + " " +
                                 (tmp.path / "root").string() + " 2>&1");
  ASSERT_EQ(check.status, 0) << check.out;
  EXPECT_NE(check.out.find("data /usr/share/epochcast"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("Detected:"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("a100-80gb"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("installed and ran in"), std::string::npos) << check.out;
}

}  // namespace
}  // namespace epochcast
