// The small text toolkit every reader of text shares (traces, the dataset, the catalogs, the
// truth files): whole-cell number parsing, why a cell is not a number, bytes made printable for
// messages, and calendar days on C++20 <chrono>. One rule each, so a cell means the same thing
// in every file the tool reads.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace epochcast::text {

// A whole decimal number (std::from_chars: "1.5", "-2e3", "inf", "nan"; a leading '+' allowed);
// false when the text is empty or anything is left over. No trimming, no locale.
bool parse_decimal(std::string_view s, double& out);

// The decimal number at the start of `s` (the same grammar, '+' allowed): where it ends, or
// nullptr when `s` does not start with one. The value is std::from_chars's to the bit; plain
// "[-]digits[.digits]" of at most 15 digits takes an exact shortcut (one division of two exact
// doubles, Clinger's fast path), since every reading of every trace passes here.
const char* parse_decimal_prefix(std::string_view s, double& out);

// For text parse_decimal refused: when it starts with a well-formed decimal number that a double
// cannot hold, why ("out of range of a double: '1e309' (beyond ±1.8e308)", or "(nonzero, below
// 4.9e-324 in magnitude; write 0)"), the text quoted with printable(); else none.
std::optional<std::string> out_of_range_reason(std::string_view s);

// One CSV line's cells (every reader of CSV: traces, the dataset, the catalogs). With
// `quotes`, RFC 4180: a cell whose first non-blank byte is '"' is quoted, may hold commas, and
// "" inside stands for one '"' (such a cell is unescaped into the splitter's own buffer); what
// follows the closing quote up to the next comma is kept (as pandas and Python's csv read it).
// Without `quotes` (nvidia-smi, which never quotes) every comma separates. Cells are views,
// not trimmed; `column` is the 1-based byte where the cell starts (its opening quote if quoted).
struct CsvCell {
  std::string_view text;
  std::uint32_t column = 1;
  bool quoted = false;
};

class CsvSplitter {
 public:
  // Splits `line` (a trailing '\r' is not removed); the cells stay valid until the next call
  // and while `line`'s bytes live. false when a quoted cell is not closed on the line: the
  // cells then end with that cell, holding the rest of the line after its quote.
  bool split(std::string_view line, bool quotes = true);
  [[nodiscard]] const std::vector<CsvCell>& cells() const { return cells_; }
  // The 1-based column of the quote left open (when split returned false), else 0.
  [[nodiscard]] std::uint32_t open_quote_column() const { return open_quote_column_; }

 private:
  std::vector<CsvCell> cells_;
  std::string unescaped_;
  std::uint32_t open_quote_column_ = 0;
};

// Control bytes as \xNN, cut at `max` bytes with "…": safe to put a file's bytes in a message.
std::string printable(std::string_view s, std::size_t max = 40);

// Days since 1970-01-01 of a proleptic Gregorian date (month 1-12, day 1-31; a day past the
// month's end counts on into the next, as mktime does).
inline std::int64_t days_from_civil(int year, unsigned month, unsigned day) {
  using namespace std::chrono;
  const year_month_day first{std::chrono::year{year}, std::chrono::month{month}, std::chrono::day{1}};
  return (sys_days{first} + days{day - 1}).time_since_epoch().count();
}

struct CivilDate {
  int year = 1970;
  unsigned month = 1, day = 1;
};

inline CivilDate civil_from_days(std::int64_t days_since_epoch) {
  using namespace std::chrono;
  const year_month_day ymd{sys_days{days{days_since_epoch}}};
  return {static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day())};
}

}  // namespace epochcast::text
