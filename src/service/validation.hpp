// The model's held-out accuracy shown next to every prediction.
#pragma once

#include "epochcast/model/stacked_model.hpp"
#include "epochcast/service/report.hpp"

namespace epochcast {

// Figures for `model`: measured by the evaluation protocols when available, else the
// model's own split-conformal interval only, with a note saying so.
[[nodiscard]] ModelValidation bundled_validation(const StackedModel& model);

}  // namespace epochcast
