// `collect -- CMD` does not leave CMD behind (issue 22): killed with SIGKILL, the collector's
// command gets SIGTERM from the kernel (PR_SET_PDEATHSIG) instead of running on as an orphan.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "collect_process.hpp"

namespace epochcast {
namespace {

using testing::fake_nvml_env;
using testing::Process;
using testing::TempDir;

// Running, not a zombie waiting for a reaper (in a container PID 1 may never reap it).
bool alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z' && stat[paren + 2] != 'X';
}

TEST(CollectLimits, KillNineOfTheCollectorEndsItsCommand) {
  TempDir dir("collect-orphan");
  const std::string pid_file = (dir / "cmd.pid").string();
  const std::string trace = std::string(EPOCHCAST_TEST_DATA) + "/h200/resnet50_224_bs256_bf16.smi.csv";
  Process p({EPOCHCAST_CLI, "collect", "-o", (dir / "t.csv").string(), "--interval-ms", "50", "-q", "--", "sh", "-c",
             "echo $$ > " + pid_file + "; exec sleep 300"},
            fake_nvml_env(trace, "10"), dir.path());
  pid_t pid = 0;
  for (int i = 0; i < 200 && pid == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    std::ifstream in(pid_file);
    in >> pid;
  }
  ASSERT_GT(pid, 0) << p.err();
  ASSERT_TRUE(alive(pid));
  p.signal(SIGKILL);
  EXPECT_EQ(p.wait(), 128 + SIGKILL);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gone = !alive(pid);
  }
  if (!gone) ::kill(pid, SIGKILL);  // not left behind by the test either
  EXPECT_TRUE(gone) << "the command (pid " << pid << ") outlived its collector";
}

}  // namespace
}  // namespace epochcast
