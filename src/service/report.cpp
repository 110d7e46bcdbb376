#include "epochcast/service/report.hpp"

#include <algorithm>

namespace epochcast {

void rank_by_time(std::vector<GpuPrediction>& predictions) {
  std::stable_sort(predictions.begin(), predictions.end(),
                   [](const GpuPrediction& a, const GpuPrediction& b) {
                     if (a.epoch_s != b.epoch_s) return a.epoch_s < b.epoch_s;
                     return a.gpu < b.gpu;
                   });
}

std::vector<CostRow> rank_by_cost(const PredictReport& report) {
  std::vector<CostRow> rows;
  for (const auto& p : report.predictions)
    for (const auto& inst : p.instances) rows.push_back({&p, &inst});
  std::stable_sort(rows.begin(), rows.end(), [](const CostRow& a, const CostRow& b) {
    if (a.instance->usd_per_epoch != b.instance->usd_per_epoch)
      return a.instance->usd_per_epoch < b.instance->usd_per_epoch;
    return a.prediction->epoch_s < b.prediction->epoch_s;
  });
  return rows;
}

}  // namespace epochcast
