// The model's held-out accuracy shown next to every prediction.
#pragma once

#include <functional>
#include <string>

#include "epochcast/model/stacked_model.hpp"
#include "epochcast/service/report.hpp"

namespace epochcast {

// $EPOCHCAST_DATA_DIR/model-validation.json, else the bundled one: the `epochcast eval --json`
// objects of the default model's fitting procedure, with the schema hash and pair count they
// belong to.
[[nodiscard]] std::string default_validation_path();

// training_data_fingerprint() of the bundled dataset with the bundled catalog (both from
// $EPOCHCAST_DATA_DIR when set, as the figures are): what the figures in `path` were measured on.
// Empty, with the reason in `why`, when they cannot be read.
[[nodiscard]] std::string bundled_data_fingerprint(std::string* why = nullptr);

// Figures for `model` from `path` when they belong to it (same schema hash, training pair count
// and fit options, and the model's data fingerprint equal to `bundled_fingerprint()`, called only
// when everything else matches), else none, with a note saying why. A malformed file is an
// Error(kParse).
[[nodiscard]] ModelValidation load_validation(const std::string& path, const StackedModel& model,
                                              const std::function<std::string()>& bundled_fingerprint);

// The note as `serve`'s clients see it (ServiceConfig::hide_paths): `path`, a file of this
// machine, named by its file name only (tests/unit/server/answer_paths_test.cpp).
void hide_validation_path(ModelValidation& v, const std::string& path);

}  // namespace epochcast
