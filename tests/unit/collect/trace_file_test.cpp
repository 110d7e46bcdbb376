#include "epochcast/collect/trace_file.hpp"

#include <gtest/gtest.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include <csignal>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "epochcast/core/error.hpp"
#include "epochcast/trace/read.hpp"

namespace epochcast {
namespace {

namespace fs = std::filesystem;

fs::path temp_file(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("epochcast-collect-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir / name;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

MetricValues values(double util, double power) {
  MetricValues v = empty_metric_values();
  v[static_cast<std::size_t>(Metric::kGpuUtil)] = util;
  v[static_cast<std::size_t>(Metric::kPower)] = power;
  return v;
}

const GpuIdentity kGpu{0, "NVIDIA H200", "GPU-5f0c0000-0000-0000-0000-000000000001"};

TEST(TraceFileWriter, RowsReadBackThroughTheCanonicalReader) {
  const fs::path path = temp_file("roundtrip.csv");
  {
    TraceFileWriter writer(path, {Metric::kGpuUtil, Metric::kPower}, kGpu);
    for (int i = 0; i < 50; ++i)
      writer.append(1764515000.0 + i * 0.1, kGpu, values(i % 7 == 0 ? NAN : i, 100 + i * 0.25));
    writer.close();
    EXPECT_EQ(writer.rows(), 50u);
  }
  const Trace t = read_trace(path.string());
  ASSERT_EQ(t.size(), 50u);
  EXPECT_EQ(t.gpu.uuid, kGpu.uuid);
  EXPECT_EQ(t.gpu.name, kGpu.name);
  EXPECT_NEAR(t.time_s[49], 4.9, 1e-3);
  EXPECT_NEAR(t.find(Metric::kPower)->values[10], 102.5, 1e-9);
  EXPECT_TRUE(std::isnan(t.find(Metric::kGpuUtil)->values[7]));  // NaN -> empty cell -> missing
  EXPECT_EQ(t.find(Metric::kGpuUtil)->values[8], 8);
}

TEST(TraceFileWriter, RowsReachTheFileWithinTheFlushInterval) {
  const fs::path path = temp_file("flush.csv");
  TraceFileWriter writer(path, {Metric::kGpuUtil, Metric::kPower}, kGpu, std::chrono::milliseconds(50));
  const auto header_bytes = fs::file_size(path);
  EXPECT_GT(header_bytes, 0u) << "the header is on disk at once";
  writer.append(1764515000.0, kGpu, values(1, 2));
  EXPECT_EQ(fs::file_size(path), header_bytes) << "buffered until the interval passes";
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  writer.append(1764515000.1, kGpu, values(3, 4));
  EXPECT_GT(fs::file_size(path), header_bytes);
  // What a kill -9 would leave now is a complete, readable trace.
  const Trace t = read_trace(path.string());
  EXPECT_EQ(t.size(), 2u);
  EXPECT_FALSE(t.diagnostics.truncated_last_line);
  writer.close();
}

TEST(TraceFileWriter, BackgroundFlushWritesWithinTheIntervalWithoutFurtherAppends) {
  const fs::path path = temp_file("background.csv");
  TraceFileWriter writer(path, {Metric::kGpuUtil, Metric::kPower}, kGpu, std::chrono::milliseconds(50));
  writer.flush_in_background();
  const auto header_bytes = fs::file_size(path);
  for (int i = 0; i < 5; ++i) writer.append(1764515000.0 + i * 0.01, kGpu, values(i, 2));
  EXPECT_EQ(fs::file_size(path), header_bytes) << "append() itself never writes in background mode";
  // The flusher thread, not a later append, brings them to the file. Waits for the flush to
  // finish (the counter moves after the sync), not just for the file to grow.
  for (int i = 0; i < 100 && writer.flushes() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(writer.flushes(), 2u);
  EXPECT_EQ(read_trace(path.string()).size(), 5u);
  writer.comment("end");
  writer.append(1764515000.1, kGpu, values(9, 9));
  writer.close();
  EXPECT_EQ(read_trace(path.string()).size(), 6u);
  EXPECT_NE(slurp(path).find("# end\n"), std::string::npos);
}

TEST(TraceFileWriter, BackgroundWriteErrorIsRethrownByTheNextAppend) {
  // A pipe whose reader went away: the header fits in the pipe buffer, the flusher's later
  // write fails (EPIPE), and the caller hears of it at its next append.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const auto old = std::signal(SIGPIPE, SIG_IGN);
  const std::string path = "/proc/self/fd/" + std::to_string(fds[1]);
  {
    TraceFileWriter writer(path, {Metric::kGpuUtil}, kGpu, std::chrono::milliseconds(20));
    writer.flush_in_background();
    ::close(fds[0]);
    bool thrown = false;
    for (int i = 0; i < 300 && !thrown; ++i) {
      try {
        writer.append(1764515000.0 + i * 0.01, kGpu, values(i, 1));
      } catch (const Error& e) {
        thrown = true;
        EXPECT_EQ(e.code(), ErrorCode::kIo);
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("not written"), std::string::npos) << e.what();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_TRUE(thrown) << "the background write error was lost";
    EXPECT_THROW(writer.close(), Error);
  }
  ::close(fds[1]);
  std::signal(SIGPIPE, old);
}

TEST(TraceFileWriter, DiskFullIsAClearIoError) {
  try {
    TraceFileWriter writer("/dev/full", {Metric::kGpuUtil}, kGpu);
    FAIL() << "writing to a full device must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("disk full"), std::string::npos) << e.what();
  }
}

// The file stops growing mid-buffer (RLIMIT_FSIZE, as a disk filling up): the count of rows
// lost is exactly the accepted rows not wholly in the file (it once said 100 where 33 were lost).
TEST(TraceFileWriter, FullDiskCountsExactlyTheRowsLost) {
  const fs::path empty = temp_file("header-only.csv");
  { TraceFileWriter(empty, {Metric::kGpuUtil, Metric::kPower}, kGpu).close(); }
  auto complete_lines = [](const std::string& text) { return std::count(text.begin(), text.end(), '\n'); };
  const auto header_lines = complete_lines(slurp(empty));

  const fs::path path = temp_file("fsize.csv");
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
  rlimit small = old;
  small.rlim_cur = 6000;  // the header and a few dozen rows: the limit falls inside a row
  std::string message;
  std::uint64_t accepted = 0;
  {
    TraceFileWriter writer(path, {Metric::kGpuUtil, Metric::kPower}, kGpu, std::chrono::hours(1));
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
    for (int i = 0; i < 300; ++i) writer.append(1764515000.0 + i * 0.1, kGpu, values(i, 100 + i * 0.25));
    accepted = writer.rows();
    try {
      writer.flush();
      ADD_FAILURE() << "a write past RLIMIT_FSIZE must fail";
    } catch (const Error& e) {
      message = e.what();
    }
    EXPECT_THROW(writer.append(1764515100.0, kGpu, values(1, 1)), Error);  // no row taken after the count
    EXPECT_THROW(writer.close(), Error);
  }
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
  std::signal(SIGXFSZ, old_handler);
  const std::string text = slurp(path);
  EXPECT_EQ(text.size(), 6000u);
  const auto rows_on_disk = static_cast<std::uint64_t>(complete_lines(text) - header_lines);
  ASSERT_GT(rows_on_disk, 0u);
  ASSERT_LT(rows_on_disk, accepted);
  EXPECT_NE(message.find(fmt::format("; {} row(s) not written", accepted - rows_on_disk)), std::string::npos)
      << message << " (" << rows_on_disk << " of " << accepted << " rows on disk)";
}

TEST(TraceFileWriter, UncreatableFileNamesThePath) {
  try {
    TraceFileWriter writer("/nonexistent-dir/trace.csv", {Metric::kGpuUtil}, kGpu);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/trace.csv"), std::string::npos);
  }
}

TEST(TraceFileWriter, CommentsStayInOrderAndDoNotBreakReading) {
  const fs::path path = temp_file("comments.csv");
  {
    TraceFileWriter writer(path, {Metric::kGpuUtil, Metric::kPower}, kGpu);
    writer.append(1764515000.0, kGpu, values(1, 2));
    writer.comment("error: GPU 0 lost at 0.1 s\nsecond line");
    writer.close();
  }
  const std::string text = slurp(path);
  EXPECT_NE(text.find("# error: GPU 0 lost at 0.1 s second line\n"), std::string::npos) << text;
  EXPECT_EQ(read_trace(path.string()).size(), 1u);
}

}  // namespace
}  // namespace epochcast
