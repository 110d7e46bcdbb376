#include "epochcast/model/dataset.hpp"
#include "epochcast/core/data_dir.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include "csv.hpp"
#include "epochcast/core/error.hpp"

namespace epochcast {
namespace {

constexpr const char* kGpuColumn = "Instances";
constexpr const char* kNameColumn = "name";
constexpr const char* kModelColumn = "model";
constexpr const char* kBatchColumn = "batchsize";
constexpr const char* kImageColumn = "datasize";
constexpr const char* kLabelColumn = "one_epoch_average_second";
constexpr const char* kTotalColumn = "total_latency_second";

// One malformed row: fail, or skip it when lenient.
struct RowError {
  std::string reason;
  SourceLocation where;
};

void note_skip(DatasetDiagnostics& d, std::uint64_t line, std::string reason) {
  ++d.rows_skipped;
  if (d.skips.size() < DatasetDiagnostics::kMaxSkipsListed) d.skips.push_back({line, std::move(reason)});
}

// The public dataset's lines are ~4 KB; a longer one is not this format (or /dev/zero).
constexpr std::size_t kMaxLineBytes = 1 << 20;

// std::getline without a bound would buffer an endless line until memory runs out.
bool read_line(std::istream& in, std::string& line, const std::string& name, std::uint64_t line_no) {
  line.clear();
  std::streambuf* sb = in.rdbuf();
  if (!sb) return false;
  for (;;) {
    const int c = sb->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in.setstate(line.empty() ? std::ios::eofbit | std::ios::failbit : std::ios::eofbit);
      return !line.empty();
    }
    if (c == '\n') return true;
    // A CR not before a newline: a file with classic Mac OS line ends was read as one header
    // line ("duplicate column name"). A zero byte is no CSV text (other control bytes are
    // left to the cells: a row naming GPU "p\x1b[31m" is skipped under --lenient).
    if (c == '\r' && sb->sgetc() != '\n' && sb->sgetc() != std::char_traits<char>::eof())
      throw Error(ErrorCode::kParse,
                  "a carriage return inside a line: CR-only line ends (classic Mac OS)? convert with tr '\\r' '\\n'",
                  {name, line_no, static_cast<std::uint32_t>(line.size() + 1), "(line)"});
    if (c == 0)
      throw Error(ErrorCode::kParse, fmt::format("binary data (byte 0x{:02x}); not a dataset CSV", c),
                  {name, line_no, static_cast<std::uint32_t>(line.size() + 1), "(line)"});
    if (line.size() >= kMaxLineBytes)
      throw Error(ErrorCode::kParse, "line longer than 1 MiB: not a dataset CSV", {name, line_no, 0, ""});
    line.push_back(static_cast<char>(c));
  }
}

}  // namespace

std::vector<std::string> Dataset::gpu_ids() const {
  std::vector<std::string> out;
  for (const auto& r : rows)
    if (std::find(out.begin(), out.end(), r.gpu_id) == out.end()) out.push_back(r.gpu_id);
  return out;
}

std::vector<std::string> Dataset::models() const {
  std::set<std::string> s;
  for (const auto& r : rows) s.insert(r.model);
  return {s.begin(), s.end()};
}

Dataset load_dataset(std::istream& in, const std::string& name, const GpuCatalog& catalog,
                     const DatasetOptions& options) {
  Dataset ds;
  ds.source = name;
  std::string line;
  std::vector<csv::Cell> cells;
  std::uint64_t line_no = 0;

  // Header.
  while (read_line(in, line, name, line_no + 1)) {
    ++line_no;
    if (!csv::trim(line).empty()) break;
  }
  if (line_no == 0 || csv::trim(line).empty())
    throw Error(ErrorCode::kParse, "empty dataset: no header row", {name, 1, 0, ""});
  if (!csv::split_line(line, cells))
    throw Error(ErrorCode::kParse, "unterminated quote in the header", {name, line_no, 0, ""});
  const std::uint64_t header_line = line_no;
  std::unordered_map<std::string, std::size_t> col;
  std::vector<std::string> header;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    header.push_back(csv::trim(cells[i].text));
    if (col.count(header.back()))
      throw Error(ErrorCode::kParse, "duplicate column name",
                  {name, header_line, cells[i].column, header.back()});
    col[header.back()] = i;
  }
  for (const char* c : {kModelColumn, kBatchColumn, kImageColumn})
    if (!col.count(c))
      throw Error(ErrorCode::kParse, "missing workload column (needed to pair runs)",
                  {name, header_line, 0, c});
  if (!col.count(kGpuColumn) && !col.count(kNameColumn))
    throw Error(ErrorCode::kParse, "missing GPU column: need 'Instances' or 'name'",
                {name, header_line, 0, kGpuColumn});
  if (!col.count(kLabelColumn) && !col.count(kTotalColumn))
    throw Error(ErrorCode::kParse,
                "missing label column: need 'one_epoch_average_second' or 'total_latency_second'",
                {name, header_line, 0, kLabelColumn});
  std::vector<std::pair<std::size_t, std::size_t>> feature_cols;  // feature index, column
  for (std::size_t f = 0; f < feature_count(); ++f) {
    auto it = col.find(feature_names()[f]);
    if (it == col.end())
      ds.diagnostics.missing_columns.push_back(feature_names()[f]);
    else
      feature_cols.emplace_back(f, it->second);
  }
  if (feature_cols.empty())
    throw Error(ErrorCode::kParse,
                "no metric statistic columns (e.g. 'utilization_gpu_mean'): not a dataset of runs",
                {name, header_line, 0, "utilization_gpu_mean"});

  std::map<std::pair<std::string, std::string>, std::uint64_t> seen;  // (gpu, workload) -> line
  while (read_line(in, line, name, line_no + 1)) {
    ++line_no;
    if (csv::trim(line).empty()) continue;
    auto fail = [&](std::string reason, std::uint32_t column, std::string field) -> RowError {
      return RowError{std::move(reason), {name, line_no, column, std::move(field)}};
    };
    try {
      if (!csv::split_line(line, cells)) throw fail("unterminated quote", 0, "");
      if (cells.size() != header.size())
        throw fail("wrong column count (" + std::to_string(cells.size()) + ", expected " +
                       std::to_string(header.size()) + ")",
                   0, "");
      auto cell = [&](const char* c) -> const csv::Cell& { return cells[col.at(c)]; };
      auto integer = [&](const char* c) {
        double v = 0;
        const auto& k = cell(c);
        if (!csv::parse_double(k.text, v) || !std::isfinite(v) || v <= 0 || v != std::floor(v) ||
            v > 1e9)
          throw fail(csv::bad_number(k.text, "expected a positive integer, got '" + k.text + "'"), k.column, c);
        return static_cast<int>(v);
      };
      DatasetRow row;
      row.line = line_no;
      // GPU: the dataset label, else the nvidia-smi name.
      const GpuSpec* gpu = nullptr;
      if (col.count(kGpuColumn)) {
        const auto& k = cell(kGpuColumn);
        gpu = catalog.find_dataset_label(k.text);
        if (!gpu) {
          if (auto m = catalog.match_smi_name(k.text)) gpu = catalog.find(m->id);
        }
        if (!gpu)
          throw fail("unknown GPU '" + k.text + "' (catalog " + catalog.source() + ": " +
                         catalog.ids_joined() + ")",
                     k.column, kGpuColumn);
      } else {
        const auto& k = cell(kNameColumn);
        if (auto m = catalog.match_smi_name(k.text)) gpu = catalog.find(m->id);
        if (!gpu)
          throw fail("unknown GPU '" + k.text + "' (catalog: " + catalog.ids_joined() + ")",
                     k.column, kNameColumn);
      }
      row.gpu_id = gpu->id;
      row.model = csv::trim(cell(kModelColumn).text);
      if (row.model.empty()) throw fail("empty model name", cell(kModelColumn).column, kModelColumn);
      row.batch_size = integer(kBatchColumn);
      row.image_size = integer(kImageColumn);
      row.workload = row.model + "/" + std::to_string(row.batch_size) + "/" +
                     std::to_string(row.image_size);
      // Label: NaN or non-positive means the run has no usable epoch time: skip, counted.
      double label = std::numeric_limits<double>::quiet_NaN();
      const char* label_col = col.count(kLabelColumn) ? kLabelColumn : kTotalColumn;
      const auto& lk = cell(label_col);
      if (!csv::parse_double(lk.text, label))
        throw fail(csv::bad_number(lk.text, "expected a number, got '" + lk.text + "'"), lk.column, label_col);
      if (label_col == kTotalColumn) label /= 10.0;  // 10 epochs per run
      if (!std::isfinite(label) || label <= 0) {
        ++ds.diagnostics.nan_labels;
        note_skip(ds.diagnostics, line_no,
                  std::string("label '") + label_col + "' is '" + lk.text + "' (not a positive number)");
        continue;
      }
      // A positive number is not yet an epoch time: 1e308 s or 1e-300 s is a unit slip or a
      // corrupt cell, and fitting log-ratios of it poisons every model. Refused with its place.
      constexpr double kShortestEpochS = 1e-3;  // 1 ms: the HTTP API's epoch_s floor too
      constexpr double kLongestEpochS = 1e7;    // ~116 days
      if (label < kShortestEpochS || label > kLongestEpochS)
        throw fail(fmt::format("epoch time {:g} s is not plausible (expected {:g} s to {:g} s)", label,
                               kShortestEpochS, kLongestEpochS),
                   lk.column, label_col);
      row.epoch_s = label;
      for (auto [f, c] : feature_cols) {
        const auto& k = cells[c];
        const std::string t = csv::trim(k.text);
        double v = 0;
        if (t.empty() || t == "[N/A]" || t == "[Not Supported]") continue;  // missing: NaN
        if (!csv::parse_double(t, v))
          throw fail(csv::bad_number(k.text, "expected a number, got '" + k.text + "'"), k.column, feature_names()[f]);
        // A statistic outside its metric's physical limits (utilisation mean 250 %, a std wider
        // than the range) is missing, as in every trace reader: 1e300 ended the fit in XGBoost
        // ("Input data contains inf", exit 70).
        if (!std::isnan(v)) {
          const MetricInfo& mi = info(feature_metrics()[f / kStatCount]);
          const bool is_std = static_cast<Stat>(f % kStatCount) == Stat::kStd;
          const double lo = is_std ? 0.0 : mi.min_value, hi = is_std ? mi.max_value - mi.min_value : mi.max_value;
          if (!(v >= lo && v <= hi)) {
            if (ds.diagnostics.impossible_values++ == 0)
              ds.diagnostics.first_impossible = fmt::format("line {}, field '{}': '{}' ({})", line_no, feature_names()[f],
                                                            csv::trim(k.text).substr(0, 64), describe_limits(mi.id));
            continue;  // NaN
          }
        }
        row.features.values[f] = v;
      }
      auto [it, inserted] = seen.emplace(std::make_pair(row.gpu_id, row.workload), line_no);
      if (!inserted) {
        ++ds.diagnostics.duplicates;
        note_skip(ds.diagnostics, line_no,
                  "duplicate of line " + std::to_string(it->second) + " (" + row.gpu_id + ", " +
                      row.workload + "): first kept");
        continue;
      }
      ds.rows.push_back(std::move(row));
      ++ds.diagnostics.rows_read;
    } catch (const RowError& e) {
      if (!options.lenient) throw Error(ErrorCode::kParse, e.reason, e.where);
      note_skip(ds.diagnostics, line_no,
                (e.where.field.empty() ? "" : "'" + e.where.field + "': ") + e.reason);
    }
  }
  if (in.bad()) throw Error(ErrorCode::kIo, "read error in '" + name + "'");
  return ds;
}

Dataset load_dataset(const std::string& path, const GpuCatalog& catalog,
                     const DatasetOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, "cannot open dataset '" + path + "'");
  // A folder opens, then its first read throws std::ios_base::failure (was exit 70).
  if (std::error_code ec; std::filesystem::is_directory(path, ec))
    throw Error(ErrorCode::kIo, "cannot read dataset '" + path + "': it is a folder");
  return load_dataset(in, path, catalog, options);
}

std::string default_dataset_path() {
  return data_dir() + "/nvidiasmi_devicequery_all.csv";  // $EPOCHCAST_DATA_DIR, else beside the binary, else the build's
}

std::vector<RunPair> make_pairs(const Dataset& dataset) {
  std::map<std::string, std::vector<std::size_t>> by_workload;
  for (std::size_t i = 0; i < dataset.rows.size(); ++i)
    by_workload[dataset.rows[i].workload].push_back(i);
  std::vector<RunPair> pairs;
  for (std::size_t i = 0; i < dataset.rows.size(); ++i)
    for (std::size_t j : by_workload[dataset.rows[i].workload])
      if (dataset.rows[j].gpu_id != dataset.rows[i].gpu_id) pairs.push_back({i, j});
  return pairs;
}

}  // namespace epochcast
