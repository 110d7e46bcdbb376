// The GPU catalog (data/gpus.csv): one row per GPU SKU with the datasheet figures the model
// uses as features, the nvidia-smi names that map to it, and the dataset's labels for it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace epochcast {

struct GpuSpec {
  std::string id;                      // short id: "t4", "a100-80gb", "h200"
  std::string name;                    // display name
  std::vector<std::string> smi_names;  // nvidia-smi "name" values, e.g. "Tesla T4"
  std::vector<std::string> dataset_labels;  // `Instances` labels in the dataset, e.g. "g4dn"
  std::string architecture;            // "Turing"
  double compute_capability = 0;
  double sm_count = 0;
  double fp32_cores_per_sm = 0;
  double max_sm_clock_mhz = 0;
  double fp32_tflops = 0;
  // Dense tensor-core peaks per precision; 0 where the GPU has no tensor path for it (P100 has
  // none; V100/T4 run FP16 only). NaN: the catalog file has no such column (an older catalog).
  double tensor_fp16_tflops = 0;       // FP16 with FP32 accumulate, as training uses
  double tensor_tf32_tflops = 0;
  double tensor_bf16_tflops = 0;
  double tensor_fp8_tflops = 0;
  double fp64_tflops = 0;              // non-tensor FP64
  double memory_gib = 0;
  std::string memory_type;
  double memory_bandwidth_gbs = 0;
  double l2_cache_mib = 0;
  double tdp_w = 0;                    // board power limit
  std::string form_factor;             // "SXM5", "PCIe", … ("" when the catalog has no column)
  std::string source;                  // where the figures come from
};

class GpuCatalog {
 public:
  GpuCatalog() = default;
  explicit GpuCatalog(std::vector<GpuSpec> gpus, std::string source = {});

  [[nodiscard]] const std::vector<GpuSpec>& gpus() const { return gpus_; }
  [[nodiscard]] const std::string& source() const { return source_; }
  // By short id, exact (case-insensitive).
  [[nodiscard]] const GpuSpec* find(std::string_view id) const;
  // By an nvidia-smi name, tolerant of case, spaces, '-' and '_' ("TeslaT4" = "Tesla T4");
  // also accepts the short id and the display name. nullopt when unknown.
  [[nodiscard]] std::optional<GpuSpec> match_smi_name(std::string_view name) const;
  // By a dataset `Instances` label ("g4dn"), case-insensitive; nullptr when unknown.
  [[nodiscard]] const GpuSpec* find_dataset_label(std::string_view label) const;
  // "p100, v100, t4, …" for error messages.
  [[nodiscard]] std::string ids_joined() const;
  // Up to `n` catalog ids near `name`, nearest first: those whose id, display name or nvidia-smi
  // name contains it (a family: "h100"), then those a typo away (closest_name's rule, between
  // normalised names). Empty when none is near: the "did you mean" of an unknown GPU.
  [[nodiscard]] std::vector<std::string> nearest_ids(std::string_view name, std::size_t n = 4) const;

 private:
  std::vector<GpuSpec> gpus_;
  std::string source_;
};

// The plausible physical range of each numeric catalog column, wide enough for any GPU from 2014
// on (small inference cards, Jetson-class parts) to ten times an H200; the loader refuses a value
// outside it, naming file, line, column, value and range (a unit slip: GB/s written in TB/s,
// TFLOPS in GFLOPS). The same table is in data/GPUS.md.
struct GpuSpecLimit {
  std::string_view column;  // catalog column, e.g. "fp32_tflops"
  double min, max;          // inclusive
  std::string_view unit;    // "TFLOPS", "GB/s", … ("" for compute capability and counts)
};
[[nodiscard]] const std::vector<GpuSpecLimit>& gpu_spec_limits();

// Reads a catalog CSV; throws Error(kIo) / Error(kParse) with file:line:column and field.
[[nodiscard]] GpuCatalog load_gpu_catalog(const std::string& path);
[[nodiscard]] GpuCatalog load_gpu_catalog_from_string(std::string_view content,
                                                      const std::string& name);
// $EPOCHCAST_DATA_DIR/gpus.csv if set, else the bundled data/gpus.csv.
[[nodiscard]] std::string default_gpu_catalog_path();
// Lowercase alphanumerics only: the key match_smi_name compares.
[[nodiscard]] std::string normalize_gpu_name(std::string_view name);

}  // namespace epochcast
