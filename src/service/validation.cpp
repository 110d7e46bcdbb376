#include "validation.hpp"

#include <fmt/format.h>

#include <cmath>

namespace epochcast {

ModelValidation bundled_validation(const StackedModel& model) {
  ModelValidation v;
  v.available = false;
  v.note = fmt::format(
      "Model fitted on {} pairs; its split-conformal 90 % interval is ×/÷{:.2f} around each prediction.",
      model.training_pairs(), std::exp(model.interval_half_width_log()));
  return v;
}

}  // namespace epochcast
