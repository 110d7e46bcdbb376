// The --json objects of detect and predict (the contract held by tests/data/golden/).
#include <fmt/format.h>

#include <cmath>

#include "epochcast/service/answer.hpp"
#include "epochcast/service/render.hpp"
#include "render_common.hpp"

namespace epochcast {

nlohmann::json to_json(const Segmentation& s) {
  nlohmann::json epochs = nlohmann::json::array();
  for (const auto& e : s.epochs) epochs.push_back({{"start_s", e.start_s}, {"end_s", e.end_s}});
  return {
      {"found", s.found},
      {"period_s", s.found ? number_or_null(s.period_s) : nlohmann::json(nullptr)},
      {"confidence", number_or_null(s.confidence)},
      {"epochs", std::move(epochs)},
      {"first_timestamp", s.first_timestamp},
      {"interval_s", number_or_null(s.interval_s)},
      {"channels", s.channels},
      {"reason", s.reason},
  };
}

nlohmann::json to_json(const ModelValidation& v) {
  nlohmann::json validation = {{"available", v.available}};
  nlohmann::json protocols = nlohmann::json::array();
  for (const auto& p : v.protocols)
    protocols.push_back({{"protocol", p.protocol},
                         {"pairs", p.pairs},
                         {"mape_pct", p.mape_pct},
                         {"median_ape_pct", p.median_ape_pct},
                         {"p90_ape_pct", p.p90_ape_pct},
                         {"interval_coverage_pct", p.interval_coverage_pct ? nlohmann::json(*p.interval_coverage_pct)
                                                                           : nlohmann::json(nullptr)},
                         {"per_target_gpu", p.per_target_gpu_mape_pct}});
  validation["protocols"] = std::move(protocols);
  validation["note"] = v.note;
  return validation;
}

nlohmann::json to_json(const Answer& a) {
  auto text_or_null = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  return {{"text", a.text},
          {"fastest_gpu", a.fastest ? nlohmann::json(a.fastest->gpu) : nlohmann::json(nullptr)},
          {"fastest_epoch_s", a.fastest ? number_or_null(a.fastest->epoch_s) : nlohmann::json(nullptr)},
          {"cheapest_gpu", a.cheapest_gpu ? nlohmann::json(a.cheapest_gpu->gpu) : nlohmann::json(nullptr)},
          {"cheapest_instance", a.cheapest ? nlohmann::json(a.cheapest->provider + " " + a.cheapest->instance)
                                           : nlohmann::json(nullptr)},
          {"cheapest_usd_per_epoch", a.cheapest ? number_or_null(a.cheapest->usd_per_epoch) : nlohmann::json(nullptr)},
          {"caveat", text_or_null(a.caveat)},
          {"no_prediction", text_or_null(a.no_prediction)}};
}

nlohmann::json to_json(const PredictReport& r) {
  const double source_epoch_s = r.source.measured_epoch_s;
  nlohmann::json predictions = nlohmann::json::array();
  for (const auto& p : r.predictions) {
    nlohmann::json instances = nlohmann::json::array();
    for (const auto& c : p.instances) {
      instances.push_back({
          {"provider", c.provider},
          {"instance", c.instance},
          {"region", c.region},
          {"gpu_count", c.gpu_count},
          {"usd_per_gpu_h", c.gpu_share_usd_h},
          {"usd_per_epoch", number_or_null(c.usd_per_epoch)},
          {"usd_total", number_or_null(c.usd_total)},
          {"spot_usd_per_epoch", c.spot_usd_per_epoch ? number_or_null(*c.spot_usd_per_epoch)
                                                      : nlohmann::json(nullptr)},
          {"price_as_of", c.as_of},
      });
    }
    predictions.push_back({
        {"gpu", p.gpu},
        {"gpu_name", p.gpu_name},
        {"epoch_s", number_or_null(p.epoch_s)},
        {"interval_s", {number_or_null(p.interval_lo_s), number_or_null(p.interval_hi_s)}},
        {"measured", p.measured},
        {"in_training_data", p.in_training_data},
        {"relative_to_source", source_epoch_s > 0 ? number_or_null(p.epoch_s / source_epoch_s)
                                                  : nlohmann::json(nullptr)},
        {"instances", std::move(instances)},
    });
  }
  nlohmann::json by_cost = nlohmann::json::array();
  for (const auto& row : rank_by_cost(r))
    by_cost.push_back({{"gpu", row.prediction->gpu},
                       {"provider", row.instance->provider},
                       {"instance", row.instance->instance},
                       {"usd_per_epoch", number_or_null(row.instance->usd_per_epoch)}});
  nlohmann::json uncertainty = nlohmann::json::array();
  for (const auto& u : r.uncertainty)
    uncertainty.push_back({{"reason", u.reason}, {"log_half_width", u.log_half_width}});
  nlohmann::json out{
      {"source",
       {{"gpu", r.source.gpu},
        {"gpu_name", r.source.gpu_name},
        {"gpu_name_in_trace", r.source.gpu_name_in_trace},
        {"trace", r.source.trace},
        {"measured_epoch_s", source_epoch_s > 0 ? number_or_null(source_epoch_s) : nlohmann::json(nullptr)},
        {"epoch_time_from", r.source.epoch_time_from},
        {"marker_epoch_s", r.source.marker_epoch_s > 0 ? number_or_null(r.source.marker_epoch_s) : nlohmann::json(nullptr)},
        {"epoch_markers", r.source.markers},
        {"in_training_data", r.source.in_training_data},
        {"features_window_s", {number_or_null(r.source.window_start_s), number_or_null(r.source.window_end_s)}},
        {"detected", to_json(r.source.detected)}}},
      {"predictions", std::move(predictions)},
      {"epochs", r.epochs},
      {"ranking_by_cost", std::move(by_cost)},
      {"uncertainty", std::move(uncertainty)},
      {"model", r.model},
      {"precision", {{"requested", r.precision}, {"rule", r.precision_rule}}},
      {"validation", to_json(r.validation)},
      {"warnings", r.warnings},
      {"answer", to_json(answer_of(r))},
  };
  // Only with a job store (--store, --job): the --json contract without one is unchanged.
  if (!r.job_key.empty() || r.store_run_id > 0) {
    out["store"] = {{"job_key", r.job_key.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.job_key)},
                    {"run_id", r.store_run_id > 0 ? nlohmann::json(r.store_run_id) : nlohmann::json(nullptr)}};
    for (std::size_t i = 0; i < r.predictions.size(); ++i)
      out["predictions"][i]["store_calibration"] = {{"log_factor", r.predictions[i].store_calibration_log},
                                                    {"pairs", r.predictions[i].store_calibration_pairs}};
  }
  return out;
}

nlohmann::json to_json(const std::vector<BatchItem>& batch) {
  nlohmann::json traces = nlohmann::json::array();
  nlohmann::json summary = nlohmann::json::array();
  for (const auto& item : batch) {
    if (!item.report) {
      traces.push_back({{"trace", item.trace},
                        {"error", {{"code", item.error_code}, {"message", item.error}}}});
      summary.push_back({{"trace", item.trace}, {"error", item.error}});
      continue;
    }
    const PredictReport& r = *item.report;
    traces.push_back(to_json(r));
    const Answer s = answer_of(r);
    summary.push_back({
        {"trace", item.trace},
        {"source_gpu", r.source.gpu},
        {"measured_epoch_s", r.source.measured_epoch_s > 0 ? number_or_null(r.source.measured_epoch_s)
                                                           : nlohmann::json(nullptr)},
        {"confidence", number_or_null(r.source.detected.confidence)},
        {"fastest_gpu", s.fastest ? nlohmann::json(s.fastest->gpu) : nlohmann::json(nullptr)},
        {"fastest_epoch_s", s.fastest ? number_or_null(s.fastest->epoch_s) : nlohmann::json(nullptr)},
        {"cheapest_gpu", s.cheapest_gpu ? nlohmann::json(s.cheapest_gpu->gpu) : nlohmann::json(nullptr)},
        {"cheapest_instance", s.cheapest ? nlohmann::json(s.cheapest->provider + " " + s.cheapest->instance)
                                         : nlohmann::json(nullptr)},
        {"cheapest_usd_per_epoch", s.cheapest ? number_or_null(s.cheapest->usd_per_epoch)
                                              : nlohmann::json(nullptr)},
        {"warnings", r.warnings.size()},
        {"answer", s.text},
    });
  }
  return {{"traces", std::move(traces)}, {"summary", std::move(summary)}};
}

}  // namespace epochcast
