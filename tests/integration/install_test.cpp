// The installed program (issue 19): `cmake --install` into a temporary prefix, the prefix moved
// elsewhere, and the copy predicts from its own share/epochcast (not the source tree's data/),
// with the completion script in place; the .deb holds the same and runs from an unpacked root.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "deb_package.hpp"

namespace epochcast {
namespace {

namespace fs = std::filesystem;
using testing::run_command;

using TempDir = testing::InstallTempDir;

const std::string kBuild = EPOCHCAST_BINARY_DIR;
const std::string kTrace = std::string(EPOCHCAST_TEST_DATA) + "/h200/vgg16_224_bs32_fp32.smi.csv";

// Runs the copied binary with no hint of the source tree: no EPOCHCAST_DATA_DIR, a fresh HOME
// (the model cache), from another folder.
testing::CommandResult run_installed(const fs::path& bin, const fs::path& home, const std::string& args) {
  return run_command("cd " + home.string() + " && env -u EPOCHCAST_DATA_DIR HOME=" + home.string() + " " +
                     bin.string() + " " + args);
}

TEST(Install, MovedPrefixPredictsFromItsOwnShareFolder) {
  TempDir tmp;
  const fs::path first = tmp.path / "first", moved = tmp.path / "elsewhere" / "opt";
  const auto install = run_command("cmake --install " + kBuild + " --prefix " + first.string() + " --strip 2>&1");
  ASSERT_EQ(install.status, 0) << install.out;
  fs::create_directories(moved.parent_path());
  fs::rename(first, moved);
  const fs::path bin = moved / "bin" / "epochcast";
  ASSERT_TRUE(fs::exists(bin));
  EXPECT_TRUE(fs::exists(moved / "share" / "epochcast" / "gpus.csv"));
  const fs::path home = tmp.path / "home";
  fs::create_directories(home);
  fs::copy_file(kTrace, home / "run.smi.csv");

  const auto version = run_installed(bin, home, "--version");
  ASSERT_EQ(version.status, 0);
  EXPECT_NE(version.out.find("data " + (moved / "share" / "epochcast").string()), std::string::npos) << version.out;

  const auto predict = run_installed(bin, home, "predict run.smi.csv --gpus t4,a100-80gb --json 2>/dev/null");
  ASSERT_EQ(predict.status, 0) << predict.out;
  EXPECT_NE(predict.out.find("\"predictions\""), std::string::npos);
  EXPECT_NE(predict.out.find("\"t4\""), std::string::npos);

  // stripped: no symbol table, no debug information (the build's binary may have neither to lose)
  const auto sections = run_command("readelf -S " + bin.string());
  ASSERT_EQ(sections.status, 0) << sections.out;
  EXPECT_NE(sections.out.find(".text"), std::string::npos) << sections.out;
  EXPECT_EQ(sections.out.find(".symtab"), std::string::npos) << sections.out;
  EXPECT_EQ(sections.out.find(".debug_info"), std::string::npos) << sections.out;
  const fs::path completion = moved / "share" / "bash-completion" / "completions" / "epochcast";
  ASSERT_TRUE(fs::exists(completion));
  EXPECT_EQ(run_command("bash -n " + completion.string()).status, 0);

  // With the source tree hidden (a tmpfs over it in a mount namespace of its own), as on a
  // machine that never had it: a fresh HOME refits the default model, which reads the dataset,
  // the catalogs and the public throughput table (until 2026-12-02 that one came from the
  // source tree's path compiled in). Needs root and unshare; elsewhere the moved prefix above is
  // the check.
  if (::geteuid() == 0 && run_command("command -v unshare >/dev/null").status == 0) {
    const std::string source = fs::path(EPOCHCAST_TEST_DATA).parent_path().parent_path().string();
    const fs::path fresh = tmp.path / "fresh-home";
    fs::create_directories(fresh);
    fs::copy_file(kTrace, fresh / "run.smi.csv");
    const auto hidden = run_command("unshare --mount sh -c 'mount -t tmpfs none " + source + " && cd " + fresh.string() +
                                    " && env -u EPOCHCAST_DATA_DIR HOME=" + fresh.string() + " " + bin.string() +
                                    " predict run.smi.csv --gpus t4 --json' 2>&1");
    ASSERT_EQ(hidden.status, 0) << hidden.out;
    EXPECT_NE(hidden.out.find("\"t4\""), std::string::npos) << hidden.out;
    EXPECT_EQ(hidden.out.find(source), std::string::npos) << "names the hidden source tree: " << hidden.out;
  }
}

TEST(Install, DebianPackageHoldsTheProgramDataAndDependencies) {
  if (run_command("command -v dpkg-deb >/dev/null && command -v dpkg-shlibdeps >/dev/null").status != 0)
    GTEST_SKIP() << "dpkg-deb / dpkg-shlibdeps (dpkg-dev) not installed";
  TempDir tmp;
  std::string pack_log;
  const fs::path deb = testing::pack_deb(tmp.path, pack_log);
  ASSERT_FALSE(deb.empty()) << pack_log;
  const auto info = run_command("dpkg-deb -f " + deb.string() + " Package Version Depends");
  EXPECT_NE(info.out.find("Package: epochcast"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("libxgboost"), std::string::npos) << info.out;  // from dpkg-shlibdeps
  const auto files = run_command("dpkg-deb -c " + deb.string());
  for (const char* f : {"./usr/bin/epochcast", "./usr/share/epochcast/gpus.csv", "./usr/share/epochcast/prices.csv",
                        "./usr/share/bash-completion/completions/epochcast"})
    EXPECT_NE(files.out.find(f), std::string::npos) << f;
  // Unpacked into a root of its own, the program reads that root's /usr/share/epochcast.
  const fs::path root = tmp.path / "root", home = tmp.path / "home";
  fs::create_directories(home);
  ASSERT_EQ(run_command("dpkg-deb -x " + deb.string() + " " + root.string()).status, 0);
  const auto version = run_installed(root / "usr" / "bin" / "epochcast", home, "--version");
  EXPECT_NE(version.out.find((root / "usr" / "share" / "epochcast").string()), std::string::npos) << version.out;
}

}  // namespace
}  // namespace epochcast
