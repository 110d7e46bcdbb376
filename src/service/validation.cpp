#include "validation.hpp"
#include "epochcast/core/data_dir.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "epochcast/core/error.hpp"
#include "epochcast/model/dataset.hpp"
#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/service/service.hpp"

namespace epochcast {

std::string default_validation_path() {
  return data_dir() + "/model-validation.json";  // $EPOCHCAST_DATA_DIR, else beside the binary, else the build's
}

namespace {

ProtocolScores parse_scores(const nlohmann::json& j, const std::string& path, std::size_t index) {
  auto number = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_number())
      throw Error(ErrorCode::kParse, fmt::format("protocols[{}] lacks the number '{}'", index, key),
                  {path, 0, 0, key});
    return j[key].get<double>();
  };
  ProtocolScores s;
  if (!j.contains("protocol") || !j["protocol"].is_string())
    throw Error(ErrorCode::kParse, fmt::format("protocols[{}] lacks 'protocol'", index), {path, 0, 0, "protocol"});
  s.protocol = j["protocol"].get<std::string>();
  s.pairs = static_cast<int>(number("pairs"));
  s.mape_pct = number("mape_pct");
  s.median_ape_pct = number("median_ape_pct");
  s.p90_ape_pct = number("p90_ape_pct");
  if (j.contains("interval") && j["interval"].contains("coverage_pct") && j["interval"]["coverage_pct"].is_number())
    s.interval_coverage_pct = j["interval"]["coverage_pct"].get<double>();
  if (j.contains("per_target_gpu") && j["per_target_gpu"].is_object())
    for (const auto& [gpu, mape] : j["per_target_gpu"].items())
      if (mape.is_number()) s.per_target_gpu_mape_pct[gpu] = mape.get<double>();
  return s;
}

// The fit options the figures were measured with must be the model's (those both sides know).
std::string options_mismatch(const nlohmann::json& stored, const FitOptions& o) {
  for (const FitParameter& p : fit_parameters()) {
    const std::string key(p.name);
    if (!p.changes_model || !stored.contains(key)) continue;
    const nlohmann::json& v = stored[key];
    FitOptions theirs = o;
    if (!p.set(theirs, v.is_boolean() ? (v.get<bool>() ? "true" : "false") : v.dump()).empty() ||
        p.value_text(theirs) != p.value_text(o))
      return fmt::format("option {} = {} there, {} in this model", key, v.dump(), p.value_text(o));
  }
  return {};
}

}  // namespace

std::string bundled_data_fingerprint(std::string* why) {
  try {
    const GpuCatalog catalog = load_gpu_catalog(default_gpu_catalog_path());
    const Dataset ds = load_dataset(default_dataset_path(), catalog);
    return training_data_fingerprint(ds, make_pairs(ds), catalog);
  } catch (const Error& e) {
    if (why) *why = e.what();
    return {};
  }
}

ModelValidation bundled_validation(const StackedModel& model) {
  return load_validation(default_validation_path(), model, [] { return bundled_data_fingerprint(); });
}

ModelValidation load_validation(const std::string& path, const StackedModel& model,
                                const std::function<std::string()>& bundled_fingerprint) {
  ModelValidation v;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    v.note = fmt::format("No validation figures ({} is absent); run `epochcast eval` to measure them.", path);
    return v;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, fmt::format("cannot open validation figures '{}'", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(buffer.str());
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for "1e400"
    throw Error(ErrorCode::kParse, fmt::format("not JSON: {}", e.what()), {path, 0, 0, ""});
  }
  if (!j.is_object() || !j.contains("protocols") || !j["protocols"].is_array())
    throw Error(ErrorCode::kParse, "expected an object with a 'protocols' array", {path, 0, 0, "protocols"});
  const std::string hash = j.value("model_schema_hash", "");
  const auto pairs = j.value("training_pairs", std::size_t{0});
  if (hash != model.schema_hash() || pairs != model.training_pairs()) {
    v.note = fmt::format(
        "No validation figures for this model: {} describes schema {} fitted on {} pairs, this model has schema {} "
        "and {} pairs; run `epochcast eval` on its data.",
        path, hash.empty() ? "?" : hash, pairs, model.schema_hash(), model.training_pairs());
    return v;
  }
  if (j.contains("options") && j["options"].is_object()) {
    if (const std::string why = options_mismatch(j["options"], model.options()); !why.empty()) {
      v.note = fmt::format("No validation figures for this model: {} was measured with other fit options ({}); run "
                           "`epochcast eval`.",
                           path, why);
      return v;
    }
  }
  // Schema, pair count and options can all match a model fitted on other data (an edited
  // dataset with as many pairs): the figures are the bundled dataset's, so the data must be too.
  const std::string& fingerprint = model.data_fingerprint();
  if (fingerprint.empty()) {
    v.note = fmt::format(
        "Held-out figures unknown for this model: its file does not record the data it was fitted on (written "
        "before model files carried a data fingerprint), so {}'s figures for the bundled dataset may not apply; "
        "refit it with `epochcast fit`, or measure it with `epochcast eval --data DATASET`.",
        path);
    return v;
  }
  if (const std::string bundled = bundled_fingerprint(); fingerprint != bundled) {
    v.note = fmt::format(
        "Held-out figures unknown for this model's data: it was fitted on data with fingerprint {}, the bundled "
        "dataset and catalog have {}, so {}'s figures do not apply; measure them with `epochcast eval --data "
        "DATASET` (and --catalog CSV if the model was fitted with one).",
        fingerprint, bundled.empty() ? "none (they could not be read)" : bundled, path);
    return v;
  }
  for (std::size_t i = 0; i < j["protocols"].size(); ++i) v.protocols.push_back(parse_scores(j["protocols"][i], path, i));
  v.available = !v.protocols.empty();
  v.note = fmt::format("Held-out scores from `epochcast eval` ({}), {}; the model's split-conformal 90 % interval is "
                       "×/÷{:.2f} around each prediction before widening.",
                       j.value("generated", "date unknown"), j.value("command", "see docs/predict.md"),
                       std::exp(model.interval_half_width_log()));
  return v;
}

void hide_validation_path(ModelValidation& v, const std::string& path) {
  if (path.empty()) return;
  const std::string name = std::filesystem::path(path).filename().string();
  for (std::size_t at = v.note.find(path); at != std::string::npos; at = v.note.find(path, at + name.size()))
    v.note.replace(at, path.size(), name);
}

}  // namespace epochcast
