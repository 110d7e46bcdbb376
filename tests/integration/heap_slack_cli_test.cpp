// keep_heap_slack(): glibc's 64 MiB heap top pad (M_TOP_PAD) is for the commands that fit a
// stack (fit, eval, predict), not for the long-running ones: with it, `detect --follow` on a
// growing trace kept 6-13 MB more resident (docs/journal/robustness.md, review 7). The pad shows in the
// process's [heap] mapping: the first heap growth after mallopt reserves request + 64 MiB.
// Both tests failed with main's binary at 0afa371 ([heap] 64.3 MiB).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "collect_process.hpp"

namespace epochcast {
namespace {

using testing::fake_nvml_env;
using testing::TempDir;

const std::string kResnet = std::string(EPOCHCAST_TEST_DATA) + "/h200/resnet50_224_bs256_bf16.smi.csv";

// Size of the process's brk heap in MiB (0 when it has none), from /proc/PID/maps.
double heap_mib(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find("[heap]") == std::string::npos) continue;
    const std::size_t dash = line.find('-'), space = line.find(' ');
    const unsigned long long lo = std::stoull(line.substr(0, dash), nullptr, 16);
    const unsigned long long hi = std::stoull(line.substr(dash + 1, space - dash - 1), nullptr, 16);
    return static_cast<double>(hi - lo) / (1024.0 * 1024.0);
  }
  return 0;
}

// Waits until the process has written something to stdout (it has read and analysed its input).
bool wait_for_output(const testing::Process& p, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!p.out().empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

#if defined(__GLIBC__)
TEST(HeapSlackCli, DetectFollowKeepsNoTopPad) {
  TempDir dir("heap-pad");
  testing::Process p({EPOCHCAST_CLI, "detect", "--follow", kResnet, "--idle-timeout", "3", "--poll-ms", "50"}, {},
                     dir.path());
  ASSERT_TRUE(wait_for_output(p, 60)) << p.err();
  const double heap = heap_mib(p.pid());
  EXPECT_LT(heap, 32.0) << "detect --follow's [heap] is " << heap << " MiB: the 64 MiB top pad is set";
  EXPECT_EQ(p.wait(60), 0) << p.err();
}

TEST(HeapSlackCli, CollectKeepsNoTopPad) {
  TempDir dir("heap-pad");
  const std::string out = (dir / "collected.csv").string();
  testing::Process p({EPOCHCAST_CLI, "collect", "-o", out, "--interval-ms", "20", "--duration", "3"},
                     fake_nvml_env(kResnet, "5"), dir.path());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // mid-run, past start-up
  const double heap = heap_mib(p.pid());
  EXPECT_LT(heap, 32.0) << "collect's [heap] is " << heap << " MiB: the 64 MiB top pad is set";
  EXPECT_EQ(p.wait(60), 0) << p.err();
}
#endif

}  // namespace
}  // namespace epochcast
