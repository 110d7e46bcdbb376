// A number a double cannot hold ("1e309") is reported as out of range, not as "not a number",
// with file, line, column and field, in every trace reader; an endless stream is stopped at the
// stream cap with an error naming it, not read until memory runs out.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "epochcast/core/error.hpp"
#include "epochcast/trace/read.hpp"

namespace epochcast {
namespace {

Error read_error(const std::string& text, const std::string& name) {
  try {
    (void)read_trace_from_string(text, name);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << name << ": no error";
  return Error(ErrorCode::kInternal, "none");
}

struct Case {
  std::string name, text, field, value;
  std::uint64_t line;
};

TEST(OutOfRange, EveryReaderSaysOutOfRangeWithFileLineFieldAndValue) {
  const std::string smi =
      "timestamp, index, name, power.draw [W], utilization.gpu [%]\n"
      "2026/11/30 15:22:53.000, 0, NVIDIA H200, 312.40 W, 97 %\n";
  const std::string canonical = "# epochcast-trace v1\ntimestamp,gpu_index,gpu_util_pct,power_w\n"
                                "2026-11-30T15:22:53.672Z,0,97,312.4\n";
  const std::string dmon = "# dcgmi dmon -e 203,155 -d 100\n#Entity   GPUTL        POWER\nID                     W\n"
                           "GPU 0     97           312.400\n";
  const Case cases[] = {
      {"a.smi.csv", smi + "2026/11/30 15:22:53.100, 0, NVIDIA H200, 1e309 W, 97 %\n", "power.draw [W]", "1e309 W", 3},
      {"b.smi.csv", smi + "2026/11/30 15:22:53.100, 0, NVIDIA H200, 312 W, -1e400 %\n", "utilization.gpu [%]",
       "-1e400 %", 3},
      {"c.smi.csv", smi + "2026/11/30 15:22:53.100, 0, NVIDIA H200, 1e-999 W, 97 %\n", "power.draw [W]", "1e-999 W",
       3},
      {"d.csv", canonical + "2026-11-30T15:22:53.772Z,0,97,1e309\n", "power_w", "1e309", 4},
      {"e.csv", canonical + "2026-11-30T15:22:53.772Z,0,+1e309,300\n", "gpu_util_pct", "+1e309", 4},
      {"f.dmon", dmon + "GPU 0     97           1e309\n", "POWER", "1e309", 5},
  };
  for (const Case& c : cases) {
    const Error e = read_error(c.text, c.name);
    SCOPED_TRACE(e.what());
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().file, c.name);
    EXPECT_EQ(e.where().line, c.line);
    EXPECT_GE(e.where().column, 1u);
    EXPECT_EQ(e.where().field, c.field);
    EXPECT_NE(e.detail().find("out of range of a double: '" + c.value + "'"), std::string::npos);
    EXPECT_EQ(e.detail().find("not a number"), std::string::npos);
  }
  // Text stays "not a number"; an overflow names which end.
  EXPECT_NE(read_error(smi + "2026/11/30 15:22:53.100, 0, NVIDIA H200, lots W, 97 %\n", "g.smi.csv")
                .detail()
                .find("not a number: 'lots W'"),
            std::string::npos);
  EXPECT_NE(read_error(cases[0].text, "a.smi.csv").detail().find("beyond ±1.8e308"), std::string::npos);
  EXPECT_NE(read_error(cases[2].text, "c.smi.csv").detail().find("below 4.9e-324"), std::string::npos);
}

// A writer that never stops, on a pipe read as a file path (/dev/fd/N, as `<(…)` gives): the
// read ends at the cap with Error(kIo) naming the path and the cap, in well under a second.
TEST(StreamCap, EndlessPipeStopsAtTheCapWithAClearError) {
  ::signal(SIGPIPE, SIG_IGN);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::atomic<std::uint64_t> written{0};
  std::thread writer([&] {
    const std::string header = "timestamp, index, name, power.draw [W], utilization.gpu [%]\n";
    (void)!::write(fds[1], header.data(), header.size());
    const std::string row = "2026/11/30 15:22:53.000, 0, NVIDIA H200, 312.40 W, 97 %\n";
    std::string block;
    while (block.size() < 65536) block += row;
    while (true) {  // until the reader closes its end (EPIPE)
      const ssize_t n = ::write(fds[1], block.data(), block.size());
      if (n <= 0) break;
      written += static_cast<std::uint64_t>(n);
    }
    ::close(fds[1]);
  });
  const std::string path = "/dev/fd/" + std::to_string(fds[0]);
  ReadOptions o;
  o.max_stream_bytes = 3 << 20;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    (void)read_trace(path, o);
    ADD_FAILURE() << "an endless stream was read to its end";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo) << e.what();
    EXPECT_NE(std::string(e.what()).find(path + ": more than 3 MiB read from a stream"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("EPOCHCAST_MAX_STREAM_BYTES"), std::string::npos) << e.what();
  }
  ::close(fds[0]);
  writer.join();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
  EXPECT_GE(written.load(), std::uint64_t{3} << 20);
}

// A regular file has an end: no cap, whatever its size; a finite stream under the cap reads whole.
TEST(StreamCap, RegularFilesAndShortStreamsAreNotCapped) {
  const std::string text = "timestamp, index, name, power.draw [W]\n2026/11/30 15:22:53.000, 0, NVIDIA H200, 312.40 W\n"
                           "2026/11/30 15:22:53.100, 0, NVIDIA H200, 312.40 W\n";
  const std::string file = ::testing::TempDir() + "/cap_" + std::to_string(::getpid()) + ".smi.csv";
  {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
  }
  ReadOptions tiny;
  tiny.max_stream_bytes = 10;  // smaller than the file
  EXPECT_EQ(read_trace(file, tiny).size(), 2u);
  std::remove(file.c_str());

  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fds[1]);
  ReadOptions exact;
  exact.max_stream_bytes = text.size();  // the cap itself is allowed
  EXPECT_EQ(read_trace("/dev/fd/" + std::to_string(fds[0]), exact).size(), 2u);
  ::close(fds[0]);
}

TEST(StreamCap, TheEnvironmentVariableSetsTheDefaultAndIsChecked) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string text = "timestamp, index, name, power.draw [W]\n2026/11/30 15:22:53.000, 0, NVIDIA H200, 312.40 W\n";
  ASSERT_EQ(::write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fds[1]);
  const std::string path = "/dev/fd/" + std::to_string(fds[0]);
  ::setenv("EPOCHCAST_MAX_STREAM_BYTES", "20", 1);
  try {
    (void)read_trace(path);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("more than 20 bytes"), std::string::npos) << e.what();
  }
  ::setenv("EPOCHCAST_MAX_STREAM_BYTES", "lots", 1);
  try {
    (void)read_trace(path);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("EPOCHCAST_MAX_STREAM_BYTES='lots'"), std::string::npos) << e.what();
  }
  ::unsetenv("EPOCHCAST_MAX_STREAM_BYTES");
  ::close(fds[0]);
}

}  // namespace
}  // namespace epochcast
