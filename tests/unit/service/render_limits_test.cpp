// format_duration at the far end of the range (issue 22: durations >= ~5e20 s printed as
// negative hours, lround's long overflowing).
#include <gtest/gtest.h>

#include <limits>

#include "epochcast/service/render.hpp"

namespace epochcast {
namespace {

TEST(FormatDurationLimits, HugeDurationsNeverPrintNegative) {
  EXPECT_EQ(format_duration(3599.0 * 1e6), "999722 h 13 min");  // under the switch: as before
  EXPECT_EQ(format_duration(5e20), "1.39e+17 h");
  EXPECT_EQ(format_duration(1e300), "2.78e+296 h");
  EXPECT_EQ(format_duration(std::numeric_limits<double>::max()), "4.99e+304 h");
  for (double s : {5e20, 6e20, 1e21, 1e100, 1e308})
    EXPECT_EQ(format_duration(s).find('-'), std::string::npos) << s << " -> " << format_duration(s);
}

}  // namespace
}  // namespace epochcast
