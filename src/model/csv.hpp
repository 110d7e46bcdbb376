// The dataset's and the catalog's cells: text::CsvSplitter's (RFC 4180 quotes), owned, CRLF tolerated.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace epochcast::csv {

struct Cell {
  std::string text;
  std::uint32_t column;  // 1-based character column where the cell starts
};

// Splits one line. Returns false when a quote is not closed on this line.
bool split_line(std::string_view line, std::vector<Cell>& cells);

// Parses a whole cell as a finite or NaN double ("nan", "NaN" accepted); false otherwise.
bool parse_double(std::string_view text, double& out);

std::string trim(std::string_view s);

// For a cell parse_double refused: "out of range of a double: '1e309' (beyond ±1.8e308)" when it
// holds a well-formed decimal number a double cannot hold (overflow, or nonzero below 4.9e-324),
// else `otherwise` (the caller's "expected a number, got '…'").
std::string bad_number(std::string_view text, std::string otherwise);

}  // namespace epochcast::csv
