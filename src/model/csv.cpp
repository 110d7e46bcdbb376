#include "csv.hpp"

#include "epochcast/core/text.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace epochcast::csv {

bool split_line(std::string_view line, std::vector<Cell>& cells) {
  cells.clear();
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::size_t i = 0;
  while (true) {
    Cell cell{{}, static_cast<std::uint32_t>(i + 1)};
    if (i < line.size() && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            cell.text.push_back('"');
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        cell.text.push_back(line[i++]);
      }
      if (!closed) return false;
      while (i < line.size() && line[i] != ',') cell.text.push_back(line[i++]);
    } else {
      while (i < line.size() && line[i] != ',') cell.text.push_back(line[i++]);
    }
    cells.push_back(std::move(cell));
    if (i >= line.size()) break;
    ++i;  // the comma
  }
  return true;
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
