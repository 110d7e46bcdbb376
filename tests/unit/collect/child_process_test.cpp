#include "epochcast/collect/child_process.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "epochcast/core/error.hpp"

namespace epochcast {
namespace {

TEST(ChildProcess, ExitStatusIsTheCommands) {
  ChildProcess p({"sh", "-c", "exit 3"});
  EXPECT_GT(p.pid(), 0);
  EXPECT_EQ(p.wait(), 3);
  EXPECT_EQ(p.poll(), 3);  // remembered, no second waitpid
  EXPECT_EQ(run_to_end({"true"}), 0);
  EXPECT_EQ(run_to_end({"false"}), 1);
}

TEST(ChildProcess, PollIsEmptyWhileRunningThenGivesTheStatus) {
  ChildProcess p({"sh", "-c", "sleep 0.3; exit 7"});
  EXPECT_FALSE(p.poll().has_value());
  std::optional<int> status;
  for (int i = 0; i < 500 && !(status = p.poll()); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(*status, 7);
}

TEST(ChildProcess, KilledBySignalIs128PlusTheSignal) {
  ChildProcess p({"sleep", "30"});
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(), 128 + SIGTERM);
  p.signal(SIGKILL);  // reaped already: nothing is sent (the pid may be someone else's now)
}

TEST(ChildProcess, CommandThatCannotStartIsAnIoErrorNamingIt) {
  try {
    ChildProcess p({"/nonexistent/train.py", "--epochs", "3"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("cannot start '/nonexistent/train.py'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ChildProcess({}), Error);
}

}  // namespace
}  // namespace epochcast
