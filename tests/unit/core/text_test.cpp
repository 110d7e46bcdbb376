// The shared text toolkit: numbers, their refusal reasons, and calendar days on <chrono>.
#include "epochcast/core/text.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace epochcast::text {
namespace {

// H. Hinnant's days_from_civil, the closed form the readers used before <chrono>: the two must
// agree on every day, including the leap rules and negative years.
std::int64_t hinnant_days(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

TEST(Text, DaysFromCivilAgreesWithTheClosedFormAndRoundTrips) {
  EXPECT_EQ(days_from_civil(1970, 1, 1), 0);
  EXPECT_EQ(days_from_civil(2000, 3, 1), 11017);
  EXPECT_EQ(days_from_civil(1969, 12, 31), -1);
  for (int y : {-400, 1, 1900, 1970, 2000, 2024, 2025, 2100, 2400, 9999})
    for (unsigned m = 1; m <= 12; ++m)
      for (unsigned d = 1; d <= 28; d += 9) {
        EXPECT_EQ(days_from_civil(y, m, d), hinnant_days(y, m, d)) << y << "-" << m << "-" << d;
        const CivilDate back = civil_from_days(days_from_civil(y, m, d));
        EXPECT_EQ(back.year, y);
        EXPECT_EQ(back.month, m);
        EXPECT_EQ(back.day, d);
      }
  // A day past the month's end counts on, as mktime and the closed form do.
  EXPECT_EQ(days_from_civil(2026, 1, 32), days_from_civil(2026, 2, 1));
  EXPECT_EQ(days_from_civil(2024, 2, 30), days_from_civil(2024, 3, 1));  // leap year
  const CivilDate leap = civil_from_days(days_from_civil(2024, 2, 29));
  EXPECT_EQ(leap.month, 2u);
  EXPECT_EQ(leap.day, 29u);
}

TEST(Text, ParseDecimalTakesWholeNumbersOnly) {
  double v = 0;
  EXPECT_TRUE(parse_decimal("1.5", v));
  EXPECT_EQ(v, 1.5);
  EXPECT_TRUE(parse_decimal("+2e3", v));
  EXPECT_EQ(v, 2000);
  EXPECT_TRUE(parse_decimal("-0.25", v));
  EXPECT_EQ(v, -0.25);
  EXPECT_TRUE(parse_decimal("nan", v));
  EXPECT_TRUE(std::isnan(v));
  for (const char* bad : {"", "+", "1.5 ", " 1.5", "1,5", "12abc", "0x10", "1e309"})
    EXPECT_FALSE(parse_decimal(bad, v)) << "'" << bad << "'";
}

TEST(Text, OutOfRangeReasonSaysWhichEnd) {
  EXPECT_EQ(out_of_range_reason("1e309").value_or(""), "out of range of a double: '1e309' (beyond ±1.8e308)");
  EXPECT_EQ(out_of_range_reason("+1e-400").value_or(""),
            "out of range of a double: '+1e-400' (nonzero, below 4.9e-324 in magnitude; write 0)");
  EXPECT_FALSE(out_of_range_reason("abc").has_value());
  EXPECT_FALSE(out_of_range_reason("12").has_value());
  EXPECT_FALSE(out_of_range_reason("").has_value());
}

TEST(Text, PrintableEscapesControlBytesAndCuts) {
  EXPECT_EQ(printable("a\tb\x7f"), "a\\x09b\\x7f");
  EXPECT_EQ(printable("abcdef", 3), "abc…");
  EXPECT_EQ(printable("ok"), "ok");
}

}  // namespace
}  // namespace epochcast::text
