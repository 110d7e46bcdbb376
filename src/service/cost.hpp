// Pricing: what one epoch and N epochs of a job cost on each instance carrying a GPU type.
#pragma once

#include <string>
#include <vector>

#include "epochcast/service/prices.hpp"
#include "epochcast/service/report.hpp"

namespace epochcast {

// One entry per instance of the catalog carrying `gpu_id`, cheapest per epoch first (ties keep
// the catalog's order): the GPU's share of the instance price times the epoch time.
[[nodiscard]] std::vector<InstanceCost> instance_costs(const PriceCatalog& prices, const std::string& gpu_id,
                                                       double epoch_s, int epochs);

}  // namespace epochcast
