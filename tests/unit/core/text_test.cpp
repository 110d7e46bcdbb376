// The shared text toolkit: numbers, their refusal reasons, and calendar days on <chrono>.
#include "epochcast/core/text.hpp"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

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

// The shortcut for plain decimals must give std::from_chars's double to the bit, and stop where
// it stops, on every shape a reader meets: short and long, signed, leading zeros, trailing dot,
// exponents, and text after the number.
TEST(Text, ParseDecimalPrefixIsFromCharsToTheBit) {
  std::mt19937_64 rng(19);
  std::vector<std::string> inputs{"0", "-0", "1.", ".5", "-.5", "-", ".", "1e5", "1.5e-3", "12.5 W", "97 %", "0x1f",
                                  "inf", "-nan", "1980", "643.21", "999999999999999", "9999999999999999",
                                  "0.000000000000001", "123456789012345.6", "00000000000000000001.5", "1.5e",
                                  "9007199254740993", "0.1", "0.30000000000000004", "143771", "1e309", "abc"};
  for (int i = 0; i < 200000; ++i) {
    std::string s;
    if (rng() % 4 == 0) s += '-';
    const int whole = static_cast<int>(rng() % 12), frac = static_cast<int>(rng() % 12);
    for (int k = 0; k < whole; ++k) s += static_cast<char>('0' + rng() % 10);
    if (frac || rng() % 8 == 0) s += '.';
    for (int k = 0; k < frac; ++k) s += static_cast<char>('0' + rng() % 10);
    if (rng() % 10 == 0) s += "e" + std::to_string(static_cast<int>(rng() % 40) - 20);
    if (rng() % 5 == 0) s += " MiB";
    inputs.push_back(std::move(s));
  }
  for (const std::string& s : inputs) {
    double want = -12345, got = -12345;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), want);
    const char* end = parse_decimal_prefix(s, got);
    if (ec != std::errc{}) {
      EXPECT_EQ(end, nullptr) << "'" << s << "'";
      continue;
    }
    ASSERT_EQ(end, p) << "'" << s << "'";
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << s;
      continue;
    }
    std::uint64_t a = 0, b = 0;
    std::memcpy(&a, &want, 8);
    std::memcpy(&b, &got, 8);
    EXPECT_EQ(a, b) << "'" << s << "': " << want << " vs " << got;
  }
  double v = 0;
  EXPECT_EQ(parse_decimal_prefix("+2.5x", v), std::string_view("+2.5x").data() + 4);
}

TEST(Text, CsvSplitterKeepsRfc4180Quotes) {
  CsvSplitter csv;
  auto texts = [&] {
    std::vector<std::string> out;
    for (const CsvCell& c : csv.cells()) out.emplace_back(c.text);
    return out;
  };
  EXPECT_TRUE(csv.split("a, b ,,c"));
  EXPECT_EQ(texts(), (std::vector<std::string>{"a", " b ", "", "c"}));
  EXPECT_EQ(csv.cells()[3].column, 8u);
  EXPECT_TRUE(csv.split(""));
  EXPECT_EQ(texts(), (std::vector<std::string>{""}));
  // Quoted: commas inside, "" for a quote, blanks before the quote, text after it kept.
  EXPECT_TRUE(csv.split(R"("x,y", "say ""hi""",z,"q"r,"")"));
  EXPECT_EQ(texts(), (std::vector<std::string>{"x,y", R"(say "hi")", "z", "qr", ""}));
  EXPECT_TRUE(csv.cells()[0].quoted);
  EXPECT_FALSE(csv.cells()[2].quoted);
  EXPECT_EQ(csv.cells()[1].column, 8u);  // its opening quote
  // Without quoting (nvidia-smi) a quote is a byte like any other.
  EXPECT_TRUE(csv.split(R"("x,y")", false));
  EXPECT_EQ(texts(), (std::vector<std::string>{R"("x)", R"(y")"}));
  // A quote left open: false, the cell holds the rest, the column says where it opened.
  EXPECT_FALSE(csv.split(R"(a,"b,c)"));
  EXPECT_EQ(texts(), (std::vector<std::string>{"a", "b,c"}));
  EXPECT_EQ(csv.open_quote_column(), 3u);
  EXPECT_TRUE(csv.split("a,b"));
  EXPECT_EQ(csv.open_quote_column(), 0u);
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
