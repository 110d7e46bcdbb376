#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/core/data_dir.hpp"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "csv.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/core/read_file.hpp"

namespace epochcast {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ';') {
      if (auto t = csv::trim(cur); !t.empty()) out.push_back(t);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (auto t = csv::trim(cur); !t.empty()) out.push_back(t);
  return out;
}

}  // namespace

const std::vector<GpuSpecLimit>& gpu_spec_limits() {
  // 2014 on: Kepler K80 (3.7) and Maxwell; small parts: Jetson Nano (0.5 TFLOPS, 25.6 GB/s,
  // 0.25 MiB L2, 4 GB, 5-10 W); large: ten times an H200 (67 FP32, 989 FP16 tensor TFLOPS,
  // 141 GB, 4.8 TB/s, 60 MiB L2, 700 W, 132 SMs) with room above.
  static const std::vector<GpuSpecLimit> limits = {
      {"compute_capability", 3.0, 20.0, ""},
      {"sm_count", 1, 2000, "SMs"},
      {"fp32_cores_per_sm", 8, 1024, "cores"},
      {"max_sm_clock_mhz", 300, 5000, "MHz"},
      {"fp32_tflops", 0.1, 1000, "TFLOPS"},
      {"tensor_fp16_tflops", 0.1, 20000, "TFLOPS"},
      {"memory_gib", 0.5, 4096, "GiB"},
      {"memory_bandwidth_gbs", 10, 100000, "GB/s"},
      {"l2_cache_mib", 0.1, 2048, "MiB"},
      {"tdp_w", 5, 10000, "W"},
  };
  return limits;
}

std::string normalize_gpu_name(std::string_view name) {
  std::string out;
  for (char c : name)
    if (std::isalnum(static_cast<unsigned char>(c)))
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

GpuCatalog::GpuCatalog(std::vector<GpuSpec> gpus, std::string source)
    : gpus_(std::move(gpus)), source_(std::move(source)) {}

const GpuSpec* GpuCatalog::find(std::string_view id) const {
  const std::string key = lower(csv::trim(id));
  for (const auto& g : gpus_)
    if (g.id == key) return &g;
  return nullptr;
}

std::optional<GpuSpec> GpuCatalog::match_smi_name(std::string_view name) const {
  const std::string key = normalize_gpu_name(name);
  if (key.empty()) return std::nullopt;
  for (const auto& g : gpus_)
    for (const auto& n : g.smi_names)
      if (normalize_gpu_name(n) == key) return g;
  for (const auto& g : gpus_)
    if (normalize_gpu_name(g.id) == key || normalize_gpu_name(g.name) == key) return g;
  return std::nullopt;
}

const GpuSpec* GpuCatalog::find_dataset_label(std::string_view label) const {
  const std::string key = lower(csv::trim(label));
  for (const auto& g : gpus_)
    for (const auto& l : g.dataset_labels)
      if (lower(l) == key) return &g;
  return nullptr;
}

std::string GpuCatalog::ids_joined() const {
  std::string out;
  for (const auto& g : gpus_) out += (out.empty() ? "" : ", ") + g.id;
  return out;
}

GpuCatalog load_gpu_catalog_from_string(std::string_view content, const std::string& name) {
  std::istringstream in{std::string(content)};
  std::string line;
  std::vector<csv::Cell> cells;
  std::map<std::string, std::size_t> col;
  std::uint64_t line_no = 0;
  std::vector<GpuSpec> gpus;
  static const char* const kRequired[] = {
      "id",          "name",          "smi_names",          "dataset_labels", "architecture",
      "compute_capability", "sm_count", "fp32_cores_per_sm", "max_sm_clock_mhz", "fp32_tflops",
      "tensor_fp16_tflops", "memory_gib", "memory_type", "memory_bandwidth_gbs", "l2_cache_mib",
      "tdp_w",       "source"};
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    ++line_no;
    if (csv::trim(line).empty()) continue;
    if (!csv::split_line(line, cells))
      throw Error(ErrorCode::kParse, "unterminated quote", {name, line_no, 0, ""});
    if (header.empty()) {
      for (std::size_t i = 0; i < cells.size(); ++i) {
        header.push_back(csv::trim(cells[i].text));
        col[header.back()] = i;
      }
      for (const char* r : kRequired)
        if (!col.count(r))
          throw Error(ErrorCode::kParse, "missing column in the GPU catalog header",
                      {name, line_no, 0, r});
      continue;
    }
    if (cells.size() != header.size())
      throw Error(ErrorCode::kParse,
                  "wrong column count (" + std::to_string(cells.size()) + ", expected " +
                      std::to_string(header.size()) + ")",
                  {name, line_no, 0, ""});
    auto text = [&](const char* c) { return csv::trim(cells[col[c]].text); };
    auto number = [&](const char* c) {
      double v = 0;
      const auto& cell = cells[col[c]];
      if (!csv::parse_double(cell.text, v) || !(v > 0))
        throw Error(ErrorCode::kParse,
                    csv::bad_number(cell.text, "expected a positive number, got '" + cell.text + "'"),
                    {name, line_no, cell.column, c});
      for (const GpuSpecLimit& limit : gpu_spec_limits())
        if (limit.column == c && !(v >= limit.min && v <= limit.max)) {
          const std::string unit = limit.unit.empty() ? "" : " " + std::string(limit.unit);
          throw Error(ErrorCode::kParse,
                      fmt::format("{}{} is outside the plausible range {} to {}{} (data/GPUS.md lists the "
                                  "limits; a unit slip?)",
                                  csv::trim(cell.text), unit, limit.min, limit.max, unit),
                      {name, line_no, cell.column, c});
        }
      return v;
    };
    GpuSpec g;
    g.id = lower(text("id"));
    if (g.id.empty())
      throw Error(ErrorCode::kParse, "empty GPU id", {name, line_no, cells[col["id"]].column, "id"});
    for (const auto& other : gpus)
      if (other.id == g.id)
        throw Error(ErrorCode::kParse, "duplicate GPU id '" + g.id + "'",
                    {name, line_no, cells[col["id"]].column, "id"});
    g.name = text("name");
    g.smi_names = split_list(text("smi_names"));
    g.dataset_labels = split_list(text("dataset_labels"));
    g.architecture = text("architecture");
    g.compute_capability = number("compute_capability");
    g.sm_count = number("sm_count");
    g.fp32_cores_per_sm = number("fp32_cores_per_sm");
    g.max_sm_clock_mhz = number("max_sm_clock_mhz");
    g.fp32_tflops = number("fp32_tflops");
    g.tensor_fp16_tflops = number("tensor_fp16_tflops");
    g.memory_gib = number("memory_gib");
    g.memory_type = text("memory_type");
    g.memory_bandwidth_gbs = number("memory_bandwidth_gbs");
    g.l2_cache_mib = number("l2_cache_mib");
    g.tdp_w = number("tdp_w");
    g.source = text("source");
    if (g.source.empty())
      throw Error(ErrorCode::kParse, "every GPU row needs a source for its figures",
                  {name, line_no, cells[col["source"]].column, "source"});
    gpus.push_back(std::move(g));
  }
  if (header.empty()) throw Error(ErrorCode::kParse, "empty GPU catalog", {name, 1, 0, ""});
  if (gpus.empty()) throw Error(ErrorCode::kParse, "GPU catalog has no rows", {name, 2, 0, ""});
  return GpuCatalog(std::move(gpus), name);
}

GpuCatalog load_gpu_catalog(const std::string& path) {
  return load_gpu_catalog_from_string(read_file_capped(path, 16 << 20, "GPU catalog"), path);
}

std::string default_gpu_catalog_path() {
  return data_dir() + "/gpus.csv";  // $EPOCHCAST_DATA_DIR, else beside the binary, else the build's
}

}  // namespace epochcast
