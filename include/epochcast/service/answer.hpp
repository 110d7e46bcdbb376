// The one-line answer a report opens with: the fastest GPU, the cheapest way to run an epoch,
// and the one caveat that matters most. Computed here, once, so the table, the JSON and the
// HTML pages say the same thing.
#pragma once

#include <string>

#include "epochcast/service/report.hpp"

namespace epochcast {

struct Answer {
  // Pointers into the report it was made from (null when there is none).
  const GpuPrediction* fastest = nullptr;
  const GpuPrediction* cheapest_gpu = nullptr;
  const InstanceCost* cheapest = nullptr;
  // Why there is no prediction, when there is none ("" otherwise).
  std::string no_prediction;
  // The first of these that applies, in this order (a rule fixed before looking at reports):
  // 1. the epoch time came from a detection below kConfidentDetection;
  // 2. the fastest or the cheapest GPU is not in the model's training data (extrapolated);
  // 3. the widest of the report's uncertainty terms;
  // 4. the precision was assumed (auto), not given;
  // "" when none does. With no prediction, no_prediction says it all.
  std::string caveat;
  std::string text;  // the line: "Fastest: …; cheapest: …. Caveat: …"
};

[[nodiscard]] Answer answer_of(const PredictReport& report);

}  // namespace epochcast
