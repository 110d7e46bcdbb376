// The model's held-out accuracy shown next to every prediction.
#pragma once

#include <string>

#include "epochcast/model/stacked_model.hpp"
#include "epochcast/service/report.hpp"

namespace epochcast {

// $EPOCHCAST_DATA_DIR/model-validation.json, else the bundled one: the `epochcast eval --json`
// objects of the default model's fitting procedure, with the schema hash and pair count they
// belong to.
[[nodiscard]] std::string default_validation_path();

// Figures for `model` from `path` when they belong to it (same schema hash and training pair
// count), else none, with a note saying why. A malformed file is an Error(kParse).
[[nodiscard]] ModelValidation load_validation(const std::string& path, const StackedModel& model);

}  // namespace epochcast
