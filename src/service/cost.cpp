#include "cost.hpp"

#include <algorithm>

namespace epochcast {

std::vector<InstanceCost> instance_costs(const PriceCatalog& prices, const std::string& gpu_id, double epoch_s,
                                         int epochs) {
  constexpr double kSecondsPerHour = 3600.0;
  std::vector<InstanceCost> out;
  for (const InstancePrice& price : prices.for_gpu(gpu_id)) {
    InstanceCost c;
    c.provider = price.provider;
    c.instance = price.instance;
    c.region = price.region;
    c.gpu_count = price.gpu_count;
    c.gpu_share_usd_h = price.gpu_share_on_demand_usd_h();
    c.usd_per_epoch = c.gpu_share_usd_h * epoch_s / kSecondsPerHour;
    c.usd_total = c.usd_per_epoch * epochs;
    if (auto spot = price.gpu_share_spot_usd_h()) c.spot_usd_per_epoch = *spot * epoch_s / kSecondsPerHour;
    c.as_of = price.as_of;
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const InstanceCost& a, const InstanceCost& b) { return a.usd_per_epoch < b.usd_per_epoch; });
  return out;
}

}  // namespace epochcast
