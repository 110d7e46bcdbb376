// read_file_capped: small inputs read whole; huge or endless ones refused at the cap.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "epochcast/core/error.hpp"
#include "epochcast/core/read_file.hpp"

namespace epochcast {
namespace {

TEST(ReadFileCapped, ReadsWholeFilesUpToTheCap) {
  const std::string path = testing::TempDir() + "/read_file_capped.txt";
  std::ofstream(path, std::ios::binary) << std::string(3 << 20, 'a');  // spans chunks
  EXPECT_EQ(read_file_capped(path, 3 << 20, "thing").size(), std::size_t{3} << 20);
  try {
    (void)read_file_capped(path, (3 << 20) - 1, "thing");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().file, path);
  }
  std::remove(path.c_str());
}

// Found with the CLI (`predict --model /dev/zero`, `--prices`, `--catalog`): the whole-file
// reads never ended, ending in "out of memory" (exit 70) after 2 GB.
TEST(ReadFileCapped, EndlessDeviceStopsAtTheCap) {
  try {
    (void)read_file_capped("/dev/zero", 4 << 20, "model file");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_NE(std::string(e.what()).find("/dev/zero: model file is larger than 4 MiB"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)read_file_capped("/nonexistent/x", 10, "model file"), Error);
}

// A folder opened as a stream and failed at the first read: "read error in model file 'd'",
// without the reason.
TEST(ReadFileCapped, FolderIsAnIoErrorSayingSo) {
  const std::string dir = testing::TempDir();
  try {
    (void)read_file_capped(dir, 10, "price catalog");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("cannot read price catalog '" + dir + "': it is a folder"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace epochcast
