#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/core/data_dir.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
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
      {"tensor_tf32_tflops", 0.1, 20000, "TFLOPS"},
      {"tensor_bf16_tflops", 0.1, 20000, "TFLOPS"},
      {"tensor_fp8_tflops", 0.1, 40000, "TFLOPS"},
      {"fp64_tflops", 0.01, 1000, "TFLOPS"},
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

namespace {
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}
}  // namespace

std::vector<std::string> GpuCatalog::nearest_ids(std::string_view name, std::size_t n) const {
  const std::string key = normalize_gpu_name(name);
  if (key.empty()) return {};
  // As closest_name's rule for a mistyped word: 1 edit up to 4 letters, 2 up to 8, else 3.
  const std::size_t allowed = key.size() <= 4 ? 1 : key.size() <= 8 ? 2 : 3;
  std::vector<std::pair<std::size_t, std::size_t>> scored;  // (distance, catalog index)
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    const GpuSpec& g = gpus_[i];
    std::vector<std::string> names = {normalize_gpu_name(g.id), normalize_gpu_name(g.name)};
    for (const auto& s : g.smi_names) names.push_back(normalize_gpu_name(s));
    std::size_t best = allowed + 1;
    for (const auto& candidate : names) {
      // A family named in part ("h100" for h100-sxm, h100-pcie, h100-nvl) is nearer than any typo.
      if (key.size() >= 3 && candidate.find(key) != std::string::npos) best = 0;
      best = std::min(best, edit_distance(key, candidate));
    }
    if (best <= allowed) scored.emplace_back(best, i);
  }
  std::stable_sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (std::size_t k = 0; k < scored.size() && out.size() < n; ++k) {
    if (scored[k].first > 0 && scored.front().first == 0) break;  // a family named: not its look-alikes
    out.push_back(gpus_[scored[k].second].id);
  }
  return out;
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
    // zero_means_none: a tensor precision the GPU lacks is written 0; anything else positive.
    auto number = [&](const char* c, bool zero_means_none = false) {
      double v = 0;
      const auto& cell = cells[col[c]];
      if (!csv::parse_double(cell.text, v) || !(v > 0 || (zero_means_none && v == 0)))
        throw Error(ErrorCode::kParse,
                    csv::bad_number(cell.text, std::string(zero_means_none ? "expected 0 (none) or a positive number"
                                                                           : "expected a positive number") +
                                                   ", got '" + cell.text + "'"),
                    {name, line_no, cell.column, c});
      if (zero_means_none && v == 0) return v;
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
    g.tensor_fp16_tflops = number("tensor_fp16_tflops", true);
    // Columns added in 2026-12 (issue 18): optional, so an operator's older catalog still loads;
    // absent reads as NaN (unknown), and the precision rules say what they do then.
    constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();
    auto optional_number = [&](const char* c, bool zero_means_none) {
      return col.count(c) ? number(c, zero_means_none) : kUnknown;
    };
    g.tensor_tf32_tflops = optional_number("tensor_tf32_tflops", true);
    g.tensor_bf16_tflops = optional_number("tensor_bf16_tflops", true);
    g.tensor_fp8_tflops = optional_number("tensor_fp8_tflops", true);
    g.fp64_tflops = optional_number("fp64_tflops", false);
    g.form_factor = col.count("form_factor") ? text("form_factor") : std::string();
    // A tensor path slower than the plain FP32 units (or FP8 slower than FP16) is a slip: a
    // sparse or per-board figure in the wrong column, or TFLOPS and GFLOPS mixed.
    auto at_least = [&](const char* c, double v, double floor, const char* what) {
      if (v > 0 && floor > 0 && v < floor)
        throw Error(ErrorCode::kParse,
                    fmt::format("{} TFLOPS is below the {} of {} TFLOPS: a tensor path is never slower "
                                "(0 means the GPU has none; data/GPUS.md)",
                                csv::trim(cells[col[c]].text), what, floor),
                    {name, line_no, cells[col[c]].column, c});
    };
    g.memory_gib = number("memory_gib");
    g.memory_type = text("memory_type");
    g.memory_bandwidth_gbs = number("memory_bandwidth_gbs");
    g.l2_cache_mib = number("l2_cache_mib");
    g.tdp_w = number("tdp_w");
    at_least("tensor_fp16_tflops", g.tensor_fp16_tflops, g.fp32_tflops, "FP32 rate");
    if (col.count("tensor_tf32_tflops")) at_least("tensor_tf32_tflops", g.tensor_tf32_tflops, g.fp32_tflops, "FP32 rate");
    if (col.count("tensor_bf16_tflops")) at_least("tensor_bf16_tflops", g.tensor_bf16_tflops, g.fp32_tflops, "FP32 rate");
    if (col.count("tensor_fp8_tflops"))
      at_least("tensor_fp8_tflops", g.tensor_fp8_tflops, g.tensor_fp16_tflops, "FP16 tensor rate");
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
