// Error messages quote untrusted input: they stay one bounded line whatever the input holds.
#include <gtest/gtest.h>

#include <string>

#include "epochcast/core/error.hpp"

namespace epochcast {
namespace {

TEST(Error, ControlBytesAreEscapedInMessageAndField) {
  const Error e(ErrorCode::kParse, "unknown GPU 'a\nb\x1b[31m'", {"d.csv", 2, 1, "In\rstances"});
  EXPECT_EQ(std::string(e.what()), "d.csv:2:1: field 'In\\x0dstances': unknown GPU 'a\\x0ab\\x1b[31m'");
  EXPECT_EQ(e.detail(), "unknown GPU 'a\\x0ab\\x1b[31m'");
  EXPECT_EQ(e.where().field, "In\\x0dstances");
  EXPECT_EQ(std::string(Error(ErrorCode::kIo, "tab\tkept\x7f").what()), "tab\tkept\\x7f");
}

// Review round 6: the location's file name went out raw, so a trace named with an escape
// sequence (`info $'a\e[31m.csv'`) coloured the terminal through the error line.
TEST(Error, ControlBytesAreEscapedInTheFileName) {
  const Error e(ErrorCode::kParse, "binary data", {"a\x1b[31m.csv", 1, 2, "(line)"});
  EXPECT_EQ(std::string(e.what()), "a\\x1b[31m.csv:1:2: field '(line)': binary data");
  EXPECT_EQ(e.where().file, "a\\x1b[31m.csv");
  EXPECT_EQ(std::string(e.what()).find('\x1b'), std::string::npos);
}

TEST(Error, HugeMessagesAreCutOnACharacterBoundary) {
  // 2047 ASCII bytes, then 'é' (2 bytes) straddling the 2048-byte cap.
  const std::string big = std::string(2047, 'x') + "\xC3\xA9" + std::string(30000, 'y');
  const Error e(ErrorCode::kParse, big, {"d.csv", 7, 3, "model"});
  EXPECT_LT(std::string(e.what()).size(), 2200u);
  EXPECT_EQ(e.detail(), std::string(2047, 'x') + "… (cut; 32049 bytes in all)");
  EXPECT_EQ(e.where().line, 7u);
}

}  // namespace
}  // namespace epochcast
