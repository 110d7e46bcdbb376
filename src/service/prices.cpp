#include "epochcast/service/prices.hpp"
#include "epochcast/core/data_dir.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "epochcast/core/error.hpp"
#include "epochcast/core/read_file.hpp"
#include "epochcast/core/text.hpp"

namespace epochcast {

namespace {

constexpr std::array<std::string_view, 9> kColumns = {
    "provider", "instance", "gpu", "gpu_count", "region",
    "on_demand_usd_h", "spot_usd_h", "as_of", "source"};

struct Cell {
  std::string_view text;
  std::uint32_t column;  // 1-based character column where the cell starts
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The catalog refuses quotes (above), so every comma separates: text::CsvSplitter without quoting.
std::vector<Cell> split_cells(std::string_view line) {
  text::CsvSplitter splitter;
  splitter.split(line, false);
  std::vector<Cell> cells;
  for (const text::CsvCell& c : splitter.cells()) cells.push_back({trim(c.text), c.column});
  return cells;
}

bool is_iso_date(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (s[i] < '0' || s[i] > '9') return false;
  const int month = (s[5] - '0') * 10 + (s[6] - '0');
  const int day = (s[8] - '0') * 10 + (s[9] - '0');
  return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

const PriceLimit& price_limit(std::string_view column) {
  for (const PriceLimit& l : price_limits())
    if (l.column == column) return l;
  throw Error(ErrorCode::kInternal, fmt::format("no price limit for column '{}'", column));
}

}  // namespace

const std::vector<PriceLimit>& price_limits() {
  // Whole-instance hourly prices: the cheapest GPU instance listed anywhere is a few cents an
  // hour (a spot T4), the dearest today ~100 $/h (8 H100 or H200); 10000 $/h leaves room for a
  // 64-GPU instance of GPUs ten times an H200. Below a cent is a unit slip ($/s, $/min).
  static const std::vector<PriceLimit> limits = {
      {"gpu_count", 1, 64, "GPUs"},
      {"on_demand_usd_h", 0.01, 10000, "$/h"},
      {"spot_usd_h", 0.01, 10000, "$/h"},
  };
  return limits;
}

std::vector<InstancePrice> PriceCatalog::for_gpu(std::string_view gpu_id) const {
  std::vector<InstancePrice> out;
  for (const auto& row : rows_)
    if (row.gpu == gpu_id) out.push_back(row);
  std::stable_sort(out.begin(), out.end(), [](const InstancePrice& a, const InstancePrice& b) {
    return a.gpu_share_on_demand_usd_h() < b.gpu_share_on_demand_usd_h();
  });
  return out;
}

PriceCatalog parse_price_catalog(std::string_view content, const std::string& name) {
  if (content.size() >= 3 && content.substr(0, 3) == "\xEF\xBB\xBF") content.remove_prefix(3);

  std::vector<InstancePrice> rows;
  std::map<std::string, std::size_t> column_of;  // column name -> cell index
  std::vector<std::string> header_names;
  std::set<std::string> seen;  // provider/instance/region
  std::uint64_t line_no = 0;
  bool have_header = false;

  std::size_t pos = 0;
  while (pos <= content.size()) {
    const std::size_t nl = content.find('\n', pos);
    const std::size_t end = nl == std::string_view::npos ? content.size() : nl;
    const std::string_view line = content.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    const std::string_view trimmed = trim(line);
    if (trimmed.empty() || trimmed.front() == '#') {
      if (nl == std::string_view::npos) break;
      continue;
    }
    if (line.find('"') != std::string_view::npos)
      throw Error(ErrorCode::kParse, "quoted cells are not supported in a price catalog",
                  {name, line_no, static_cast<std::uint32_t>(line.find('"') + 1), ""});

    const std::vector<Cell> cells = split_cells(line);
    if (!have_header) {
      for (std::size_t i = 0; i < cells.size(); ++i) {
        const std::string col(cells[i].text);
        if (column_of.count(col))
          throw Error(ErrorCode::kParse, "column appears twice in the header",
                      {name, line_no, cells[i].column, col});
        column_of[col] = i;
        header_names.push_back(col);
      }
      for (std::string_view required : kColumns)
        if (!column_of.count(std::string(required)))
          throw Error(ErrorCode::kParse,
                      fmt::format("header lacks column '{}' (expected {})", required,
                                  fmt::join(kColumns, ",")),
                      {name, line_no, 1, std::string(required)});
      have_header = true;
      if (nl == std::string_view::npos) break;
      continue;
    }

    if (cells.size() != header_names.size())
      throw Error(ErrorCode::kParse,
                  fmt::format("wrong number of cells ({}, the header has {})", cells.size(),
                              header_names.size()),
                  {name, line_no, cells.back().column, ""});

    auto cell = [&](std::string_view col) -> const Cell& { return cells[column_of.at(std::string(col))]; };
    auto fail = [&](std::string_view col, const std::string& why) -> Error {
      return Error(ErrorCode::kParse, why, {name, line_no, cell(col).column, std::string(col)});
    };
    auto text = [&](std::string_view col) {
      const Cell& c = cell(col);
      if (c.text.empty()) throw fail(col, "empty cell; a value is required");
      return std::string(c.text);
    };
    auto price = [&](std::string_view col) {
      const std::string s(cell(col).text);
      double v = 0;
      if (!text::parse_decimal(s, v)) {  // the one number parser (core/text)
        if (auto why = text::out_of_range_reason(s)) throw fail(col, *why);
        throw fail(col, fmt::format("'{}' is not a number", s));
      }
      if (!std::isfinite(v))
        throw fail(col, fmt::format("'{}' is not a number", s));
      const PriceLimit& limit = price_limit(col);
      if (!(v >= limit.min && v <= limit.max))
        throw fail(col, fmt::format("{} {} is outside the plausible range {} to {} {} (data/PRICES.md lists the "
                                    "limits)", s, limit.unit, limit.min, limit.max, limit.unit));
      return v;
    };

    InstancePrice row;
    row.provider = text("provider");
    row.instance = text("instance");
    row.gpu = text("gpu");
    row.region = text("region");
    {
      const std::string_view s = cell("gpu_count").text;
      int count = 0;
      const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), count);
      if (s.empty() || ec != std::errc() || ptr != s.data() + s.size())
        throw fail("gpu_count", fmt::format("'{}' is not a whole number", s));
      const PriceLimit& limit = price_limit("gpu_count");
      if (count < limit.min || count > limit.max)
        throw fail("gpu_count", fmt::format("{} GPUs per instance is outside the plausible range {} to {} {} "
                                            "(data/PRICES.md lists the limits)",
                                            count, limit.min, limit.max, limit.unit));
      row.gpu_count = count;
    }
    row.on_demand_usd_h = price("on_demand_usd_h");
    if (!cell("spot_usd_h").text.empty()) row.spot_usd_h = price("spot_usd_h");
    row.as_of = text("as_of");
    if (!is_iso_date(row.as_of)) throw fail("as_of", fmt::format("'{}' is not a YYYY-MM-DD date", row.as_of));
    row.source = text("source");

    const std::string key = row.provider + "/" + row.instance + "/" + row.region;
    if (!seen.insert(key).second)
      throw fail("instance", fmt::format("duplicate row for {} {} in {}", row.provider,
                                         row.instance, row.region));
    rows.push_back(std::move(row));
    if (nl == std::string_view::npos) break;
  }
  if (!have_header) throw Error(ErrorCode::kParse, "empty price catalog: no header", {name, 1, 1, ""});
  return PriceCatalog(std::move(rows));
}

PriceCatalog load_price_catalog(const std::string& path) {
  return parse_price_catalog(read_file_capped(path, 16 << 20, "price catalog"), path);
}

std::string default_price_catalog_path() {
  return data_dir() + "/prices.csv";  // $EPOCHCAST_DATA_DIR, else beside the binary, else the build's
}

}  // namespace epochcast
