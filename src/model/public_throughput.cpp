#include "epochcast/model/public_throughput.hpp"

#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>
#include <tuple>

#include "csv.hpp"
#include "epochcast/core/data_dir.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/core/read_file.hpp"

namespace epochcast {
namespace {

constexpr std::size_t kMaxTableBytes = 16 << 20;  // the bundled table is 49 KB

struct NameMap {
  std::map<std::string, std::string> gpu, precision, workload;
};

// Calls row(line_no, cells, column_of) for each data line after the header.
template <typename Row>
void each_row(const std::string& text, const std::string& name, const std::vector<std::string>& required, Row row) {
  std::istringstream in(text);
  std::string line;
  std::vector<csv::Cell> cells;
  std::map<std::string, std::size_t> col;
  std::uint64_t line_no = 0;
  bool header = true;
  while (std::getline(in, line)) {
    ++line_no;
    if (csv::trim(line).empty()) continue;
    if (!csv::split_line(line, cells)) throw Error(ErrorCode::kParse, "unterminated quote", {name, line_no, 0, ""});
    if (header) {
      for (std::size_t i = 0; i < cells.size(); ++i) col[csv::trim(cells[i].text)] = i;
      for (const auto& r : required)
        if (!col.count(r)) throw Error(ErrorCode::kParse, "missing column in the header", {name, line_no, 0, r});
      header = false;
      continue;
    }
    if (cells.size() < col.size())
      throw Error(ErrorCode::kParse,
                  "wrong column count (" + std::to_string(cells.size()) + ", expected " + std::to_string(col.size()) + ")",
                  {name, line_no, 0, ""});
    row(line_no, cells, col);
  }
  if (header) throw Error(ErrorCode::kParse, "empty file: no header", {name, 1, 0, ""});
}

NameMap load_names(const std::string& path) {
  NameMap m;
  each_row(read_file_capped(path, kMaxTableBytes, "public-throughput name map"), path, {"kind", "name", "value"},
           [&](std::uint64_t line_no, const std::vector<csv::Cell>& c, std::map<std::string, std::size_t>& col) {
             const std::string kind = csv::trim(c[col["kind"]].text);
             const std::string key = csv::trim(c[col["name"]].text), value = csv::trim(c[col["value"]].text);
             if (kind == "gpu") m.gpu[key] = value;
             else if (kind == "precision") m.precision[key] = value;
             else if (kind == "workload") m.workload[key] = value;
             else
               throw Error(ErrorCode::kParse, "unknown kind '" + kind + "' (gpu, precision or workload)",
                           {path, line_no, c[col["kind"]].column, "kind"});
           });
  return m;
}

}  // namespace

std::size_t PublicTable::rows_skipped() const {
  std::size_t n = 0;
  for (const auto* m : {&unknown_gpus, &unknown_workloads, &unknown_precisions})
    for (const auto& [_, k] : *m) n += k;
  return n;
}

std::map<std::tuple<std::string, Precision, std::string>, double> PublicTable::mean_throughput() const {
  std::map<std::tuple<std::string, Precision, std::string>, std::pair<double, int>> acc;
  for (const auto& r : rows) {
    auto& [sum, n] = acc[{r.gpu_id, r.precision, r.workload}];
    sum += std::log(r.throughput);
    ++n;
  }
  std::map<std::tuple<std::string, Precision, std::string>, double> out;
  for (const auto& [k, v] : acc) out[k] = std::exp(v.first / v.second);
  return out;
}

std::vector<std::string> PublicTable::gpu_ids() const {
  std::set<std::string> s;
  for (const auto& r : rows) s.insert(r.gpu_id);
  return {s.begin(), s.end()};
}

PublicTable load_public_throughput(const std::string& table_path, const std::string& names_path,
                                   const GpuCatalog& catalog) {
  const NameMap names = load_names(names_path);
  PublicTable t;
  t.source = table_path;
  each_row(read_file_capped(table_path, kMaxTableBytes, "public throughput table"), table_path,
           {"gpu_name", "precision", "workload", "throughput"},
           [&](std::uint64_t line_no, const std::vector<csv::Cell>& c, std::map<std::string, std::size_t>& col) {
             const std::string machine = csv::trim(c[col["gpu_name"]].text);
             const std::string prec = csv::trim(c[col["precision"]].text);
             const std::string workload = csv::trim(c[col["workload"]].text);
             const auto g = names.gpu.find(machine);
             if (g == names.gpu.end() || !catalog.find(g->second)) {
               ++t.unknown_gpus[machine];
               return;
             }
             const auto p = names.precision.find(prec);
             const auto precision = p == names.precision.end() ? std::nullopt : precision_from_string(p->second);
             if (!precision) {
               ++t.unknown_precisions[prec];
               return;
             }
             if (!names.workload.count(workload)) {
               ++t.unknown_workloads[workload];
               return;
             }
             const auto& cell = c[col["throughput"]];
             double v = 0;
             if (!csv::parse_double(cell.text, v) || !(v > 0) || !std::isfinite(v))
               throw Error(ErrorCode::kParse,
                           csv::bad_number(cell.text, "expected a positive throughput, got '" + cell.text + "'"),
                           {table_path, line_no, cell.column, "throughput"});
             t.rows.push_back({line_no, g->second, *precision, workload, v});
           });
  return t;
}

// Through data_dir(), as every bundled file: an installed copy has no source tree to fall back on.
std::string default_public_throughput_path() { return data_dir() + "/public-throughput/lambda_pytorch_1gpu.csv"; }

std::string default_public_names_path() { return data_dir() + "/public-throughput/names.csv"; }

}  // namespace epochcast
