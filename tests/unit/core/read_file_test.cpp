// read_file_capped: small inputs read whole; huge or endless ones refused at the cap.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <thread>
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
// reads never ended, ending in "out of memory" (exit 70) after 2 GB. Then they stopped at the
// cap, which still read 256 MiB of zeros for a model; now a device is refused before reading.
TEST(ReadFileCapped, DeviceIsRefusedBeforeReading) {
  try {
    (void)read_file_capped("/dev/zero", 4 << 20, "model file");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("cannot read model file '/dev/zero': it is a character device, not a file"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)read_file_capped("/nonexistent/x", 10, "model file"), Error);
}

// A regular file over the cap is refused from its size, naming it, without reading it.
TEST(ReadFileCapped, OversizedRegularFileIsRefusedFromItsSize) {
  const std::string path = testing::TempDir() + "/read_file_capped_sparse.bin";
  std::remove(path.c_str());
  { std::ofstream(path, std::ios::binary); }
  ASSERT_EQ(::truncate(path.c_str(), std::int64_t{1} << 40), 0);  // 1 TiB, sparse: reading it would take hours
  try {
    (void)read_file_capped(path, 4 << 20, "model file");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_NE(std::string(e.what()).find("model file is larger than 4 MiB (1099511627776 bytes)"), std::string::npos)
        << e.what();
  }
  std::remove(path.c_str());
}

// Text inputs hold no zero byte: an endless pipe of them stops at the first chunk, not the cap.
TEST(ReadFileCapped, ZeroBytesEndTheReadAtOnce) {
  const std::string path = testing::TempDir() + "/read_file_capped_fifo";
  std::remove(path.c_str());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  std::signal(SIGPIPE, SIG_IGN);
  std::atomic<std::uint64_t> written{0};
  std::thread writer([&] {
    const int fd = ::open(path.c_str(), O_WRONLY);
    if (fd < 0) return;
    const std::string zeros(1 << 16, '\0');
    while (written < (std::uint64_t{1} << 30)) {  // endless for the reader: 1 GiB
      const ssize_t n = ::write(fd, zeros.data(), zeros.size());
      if (n <= 0) break;  // EPIPE: the reader gave up
      written += static_cast<std::uint64_t>(n);
    }
    ::close(fd);
  });
  try {
    (void)read_file_capped(path, 256 << 20, "model file");
    ADD_FAILURE() << "read a FIFO of zeros";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_NE(std::string(e.what()).find("binary data (a zero byte at offset 0): not a model file"), std::string::npos)
        << e.what();
  }
  writer.join();
  EXPECT_LT(written.load(), std::uint64_t{64} << 20);  // was 256 MiB (the cap)
  std::remove(path.c_str());
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

// A read that fails says why ("read error in model file '/proc/self/mem'" had no reason).
TEST(ReadFileCapped, ReadErrorCarriesTheReason) {
  try {
    (void)read_file_capped("/proc/self/mem", 1 << 20, "model file");  // offset 0 is unmapped: EIO
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("read error in model file '/proc/self/mem': Input/output error"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace epochcast
