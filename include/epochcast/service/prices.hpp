// Price catalog: dated cloud list prices per instance type (data/prices.csv, data/PRICES.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace epochcast {

struct InstancePrice {
  std::string provider;          // "aws", "gcp", "azure"
  std::string instance;          // "g4dn.xlarge"
  std::string gpu;               // GPU id as in data/gpus.csv
  int gpu_count = 1;             // GPUs on the instance
  std::string region;            // "us-east-1"
  double on_demand_usd_h = 0;    // whole instance
  std::optional<double> spot_usd_h;  // whole instance; absent when not known
  std::string as_of;             // YYYY-MM-DD the figure was the list price
  std::string source;            // where it was read

  // What one GPU of this instance costs per hour: the job pays its GPU's share.
  [[nodiscard]] double gpu_share_on_demand_usd_h() const { return on_demand_usd_h / gpu_count; }
  [[nodiscard]] std::optional<double> gpu_share_spot_usd_h() const {
    if (!spot_usd_h) return std::nullopt;
    return *spot_usd_h / gpu_count;
  }
};

class PriceCatalog {
 public:
  PriceCatalog() = default;
  explicit PriceCatalog(std::vector<InstancePrice> rows) : rows_(std::move(rows)) {}

  [[nodiscard]] const std::vector<InstancePrice>& rows() const { return rows_; }
  // Every instance carrying `gpu_id` (exact id match), cheapest GPU share first.
  [[nodiscard]] std::vector<InstancePrice> for_gpu(std::string_view gpu_id) const;
  [[nodiscard]] bool empty() const { return rows_.empty(); }

 private:
  std::vector<InstancePrice> rows_;
};

// The plausible range of each numeric price column (per instance, inclusive); the loader refuses
// a value outside it, naming file, line, column, value and range. The same table is in
// data/PRICES.md.
struct PriceLimit {
  std::string_view column;  // "on_demand_usd_h", "spot_usd_h", "gpu_count"
  double min, max;
  std::string_view unit;    // "$/h", "GPUs"
};
[[nodiscard]] const std::vector<PriceLimit>& price_limits();

// Reads a price CSV with the header
// provider,instance,gpu,gpu_count,region,on_demand_usd_h,spot_usd_h,as_of,source (any order).
// Throws Error(kIo) when unreadable, Error(kParse) with file:line:column and the column name
// for a missing column, a bad number, a bad date, an empty required cell or a duplicate row.
[[nodiscard]] PriceCatalog load_price_catalog(const std::string& path);
[[nodiscard]] PriceCatalog parse_price_catalog(std::string_view content, const std::string& name);
// data/prices.csv of the bundled data folder (EPOCHCAST_DATA_DIR at build time, or the
// EPOCHCAST_DATA_DIR environment variable).
[[nodiscard]] std::string default_price_catalog_path();

}  // namespace epochcast
