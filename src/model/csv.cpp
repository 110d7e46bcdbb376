#include "csv.hpp"

#include "epochcast/core/text.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace epochcast::csv {

bool split_line(std::string_view line, std::vector<Cell>& cells) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  thread_local text::CsvSplitter splitter;  // the one CSV splitter (core/text)
  const bool closed = splitter.split(line, true);
  cells.clear();
  for (const text::CsvCell& c : splitter.cells()) cells.push_back({std::string(c.text), c.column});
  return closed;
}

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

bool parse_double(std::string_view cell, double& out) {
  const std::string t = trim(cell);
  if (t == "nan" || t == "NaN" || t == "NAN") {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  return text::parse_decimal(t, out) && std::isfinite(out);
}

std::string bad_number(std::string_view cell, std::string otherwise) {
  return text::out_of_range_reason(trim(cell)).value_or(std::move(otherwise));
}

}  // namespace epochcast::csv
