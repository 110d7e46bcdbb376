// RunRecord as JSON: the line format of `jobs export`/`import` and the body of `jobs show --json`.
// Feature values by name (null for a missing channel), so a row survives a change of the
// feature list: unknown names are ignored, absent ones read as missing.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "epochcast/store/run_record.hpp"

namespace epochcast {

[[nodiscard]] nlohmann::json run_to_json(const RunRecord& run);
// Throws Error(kParse) naming `where` (e.g. "runs.jsonl:3") and the field for a missing or
// mistyped field.
[[nodiscard]] RunRecord run_from_json(const nlohmann::json& j, const std::string& where);

[[nodiscard]] nlohmann::json features_to_json(const FeatureRow& row);
[[nodiscard]] FeatureRow features_from_json(const nlohmann::json& j, const std::string& where);
[[nodiscard]] nlohmann::json detection_to_json(const RunRecord& run);
void detection_from_json(const nlohmann::json& j, RunRecord& run, const std::string& where);

}  // namespace epochcast
