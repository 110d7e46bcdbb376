#include "epochcast/store/run_json.hpp"

#include <fmt/format.h>

#include <cmath>

#include "epochcast/core/error.hpp"

namespace epochcast {
namespace {

double number_or_nan(const nlohmann::json& v) { return v.is_number() ? v.get<double>() : std::nan(""); }

nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

template <typename T>
T field(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key))
    throw Error(ErrorCode::kParse, fmt::format("{}: missing field '{}'", where, key), {where, 0, 0, key});
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(ErrorCode::kParse, fmt::format("{}: field '{}' has the wrong type ({})", where, key,
                                               j.at(key).type_name()),
                {where, 0, 0, key});
  }
}

template <typename T>
T field_or(const nlohmann::json& j, const char* key, T fallback, const std::string& where) {
  return j.is_object() && j.contains(key) && !j.at(key).is_null() ? field<T>(j, key, where) : fallback;
}

}  // namespace

double FeedbackRecord::abs_pct_error() const { return std::abs(predicted_s - measured_s) / measured_s * 100.0; }

nlohmann::json features_to_json(const FeatureRow& row) {
  nlohmann::json j = nlohmann::json::object();
  const auto& names = feature_names();
  for (std::size_t i = 0; i < names.size() && i < row.values.size(); ++i) j[names[i]] = finite_or_null(row.values[i]);
  return j;
}

FeatureRow features_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object())
    throw Error(ErrorCode::kParse, fmt::format("{}: 'features' is not an object", where), {where, 0, 0, "features"});
  FeatureRow row;
  for (const auto& [name, value] : j.items()) {
    const auto i = feature_index(name);
    if (!i) continue;  // a feature this build does not know
    if (!value.is_null() && !value.is_number())
      throw Error(ErrorCode::kParse, fmt::format("{}: feature '{}' is not a number", where, name),
                  {where, 0, 0, "features." + name});
    row.values[*i] = number_or_nan(value);
  }
  return row;
}

nlohmann::json detection_to_json(const RunRecord& r) {
  return {{"found", r.detected},
          {"period_s", r.detected ? nlohmann::json(r.period_s) : nlohmann::json(nullptr)},
          {"confidence", r.confidence},
          {"epochs", r.epochs_found},
          {"reason", r.detect_reason}};
}

void detection_from_json(const nlohmann::json& j, RunRecord& r, const std::string& where) {
  r.detected = field<bool>(j, "found", where);
  r.period_s = field_or<double>(j, "period_s", 0.0, where);
  r.confidence = field_or<double>(j, "confidence", 0.0, where);
  r.epochs_found = field_or<int>(j, "epochs", 0, where);
  r.detect_reason = field_or<std::string>(j, "reason", "", where);
}

nlohmann::json run_to_json(const RunRecord& r) {
  nlohmann::json preds = nlohmann::json::array();
  for (const auto& p : r.predictions)
    preds.push_back({{"target_gpu", p.target_gpu},
                     {"epoch_s", p.epoch_s},
                     {"lo_s", finite_or_null(p.lo_s)},
                     {"hi_s", finite_or_null(p.hi_s)},
                     {"calibration_log", p.calibration_log}});
  return {{"id", r.id},
          {"uid", r.uid},
          {"recorded_at", r.recorded_at},
          {"job_key", r.job_key.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.job_key)},
          {"gpu", r.gpu},
          {"catalog_version", r.catalog_version},
          {"trace", r.trace},
          {"detection", detection_to_json(r)},
          {"epoch_s", r.epoch_s > 0 ? nlohmann::json(r.epoch_s) : nlohmann::json(nullptr)},
          {"epoch_time_from", r.epoch_time_from},
          {"features", features_to_json(r.features)},
          {"model_version", r.model_version},
          {"predictions", preds}};
}

RunRecord run_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw Error(ErrorCode::kParse, fmt::format("{}: a run is a JSON object", where), {where, 0, 0, ""});
  RunRecord r;
  r.id = field_or<std::int64_t>(j, "id", 0, where);
  r.uid = field<std::string>(j, "uid", where);
  r.recorded_at = field<std::string>(j, "recorded_at", where);
  r.job_key = field_or<std::string>(j, "job_key", "", where);
  r.gpu = field<std::string>(j, "gpu", where);
  r.catalog_version = field_or<std::string>(j, "catalog_version", "", where);
  r.trace = field_or<std::string>(j, "trace", "", where);
  if (!j.contains("detection"))
    throw Error(ErrorCode::kParse, fmt::format("{}: missing field 'detection'", where), {where, 0, 0, "detection"});
  detection_from_json(j.at("detection"), r, where);
  r.epoch_s = field_or<double>(j, "epoch_s", 0.0, where);
  r.epoch_time_from = field_or<std::string>(j, "epoch_time_from", "", where);
  if (!j.contains("features"))
    throw Error(ErrorCode::kParse, fmt::format("{}: missing field 'features'", where), {where, 0, 0, "features"});
  r.features = features_from_json(j.at("features"), where);
  r.model_version = field_or<std::string>(j, "model_version", "", where);
  if (j.contains("predictions")) {
    const auto& ps = j.at("predictions");
    if (!ps.is_array())
      throw Error(ErrorCode::kParse, fmt::format("{}: 'predictions' is not an array", where), {where, 0, 0, "predictions"});
    for (const auto& p : ps) {
      StoredPrediction sp;
      sp.target_gpu = field<std::string>(p, "target_gpu", where);
      sp.epoch_s = field<double>(p, "epoch_s", where);
      sp.lo_s = field_or<double>(p, "lo_s", std::nan(""), where);
      sp.hi_s = field_or<double>(p, "hi_s", std::nan(""), where);
      sp.calibration_log = field_or<double>(p, "calibration_log", 0.0, where);
      r.predictions.push_back(std::move(sp));
    }
  }
  return r;
}

}  // namespace epochcast
