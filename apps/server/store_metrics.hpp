// serve's /metrics samples from the job store: the running error of predictions a later run of
// the same job checked, per GPU pair (docs/store.md, "Feedback"). One function producing text
// in the Prometheus exposition format, so /metrics can compose it with other families.
#pragma once

#include <string>
#include <vector>

#include "epochcast/service/service.hpp"  // PairPredictionError

namespace epochcast::server {

// epochcast_prediction_error_ratio{source_gpu,target_gpu} (mean |predicted - measured| /
// measured), epochcast_prediction_log_ratio (mean log(predicted / measured): the sign says which
// way) and epochcast_prediction_checks (how many checks), with HELP/TYPE lines; an empty list
// still writes the HELP/TYPE lines (a scrape then sees the families exist).
[[nodiscard]] std::string prediction_error_exposition(const std::vector<PairPredictionError>& errors);

}  // namespace epochcast::server
