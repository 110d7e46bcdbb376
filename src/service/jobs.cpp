// Service's jobs_* operations: the job store's runs, export/import, forget, and the measured
// pairs with the calibration and running error they give the service's model (docs/store.md).
#include "epochcast/service/jobs.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "epochcast/core/error.hpp"
#include "epochcast/service/request.hpp"
#include "epochcast/store/calibration.hpp"
#include "epochcast/store/run_json.hpp"
#include "service_impl.hpp"

namespace epochcast {

void JobsRequest::validate() const {
  if (run_id < 0) throw FieldError("run_id", fmt::format("must be a positive run id, got {}", run_id));
}

std::string JobsRequest::resolved_store_path() const {
  if (!store_path.empty()) return store_path;
  std::string p = default_store_path();
  if (p.empty()) throw FieldError("store_path", "is needed: no job store given, and EPOCHCAST_STORE is not set");
  return p;
}

JobsList Service::jobs_list(const JobsRequest& request) const {
  request.validate();
  const JobStore store(request.resolved_store_path(), StoreMode::kReadOnly);
  return {store.path(), store.schema_version(),
          store.runs(request.job_key.empty() ? std::nullopt : std::optional<std::string>(request.job_key))};
}

RunRecord Service::jobs_show(const JobsRequest& request) const {
  request.validate();
  const JobStore store(request.resolved_store_path(), StoreMode::kReadOnly);
  auto run = store.run(request.run_id);
  if (!run) throw Error(ErrorCode::kNotFound, fmt::format("store '{}' has no run {}", store.path(), request.run_id));
  return std::move(*run);
}

std::size_t Service::jobs_export(const JobsRequest& request, std::ostream& out) const {
  request.validate();
  const JobStore store(request.resolved_store_path(), StoreMode::kReadOnly);
  store.export_jsonl(out);
  return store.run_count();
}

JobsImport Service::jobs_import(const JobsRequest& request, std::istream& in, const std::string& name) const {
  request.validate();
  JobStore store(request.resolved_store_path(), StoreMode::kReadWrite);
  return {store.import_jsonl(in, name), store.path()};
}

std::size_t Service::jobs_forget(const JobsRequest& request) const {
  request.validate();
  if ((request.run_id > 0) == !request.job_key.empty())
    throw FieldError("job_key", "or a run id: give one of them, not both or neither");
  JobStore store(request.resolved_store_path(), StoreMode::kReadWrite);
  const std::size_t n = request.run_id > 0 ? store.forget_run(request.run_id) : store.forget_job(request.job_key);
  if (n == 0)
    throw Error(ErrorCode::kNotFound,
                request.run_id > 0 ? fmt::format("store '{}' has no run {}", store.path(), request.run_id)
                                   : fmt::format("store '{}' has no run of job '{}'", store.path(), request.job_key));
  return n;
}

JobPairs Service::jobs_pairs(const JobsRequest& request) const {
  request.validate();
  const JobStore store(request.resolved_store_path(), StoreMode::kReadOnly);
  impl_->load();
  const Impl& s = *impl_;
  const auto runs = store.runs();
  const EpochPredictor predict = [&](const RunRecord& r, const std::string& t) {
    const GpuSpec* sg = s.catalog.find(r.gpu);
    const GpuSpec* tg = s.catalog.find(t);
    return sg && tg ? s.model->predict(r.features, r.epoch_s, *sg, *tg).epoch_s : 0.0;
  };
  PairSet set = measured_pairs(runs, predict);
  const Calibration cal = fit_calibration(pair_residuals(set, runs, *s.model, s.catalog));

  struct Err {
    std::size_t n = 0;
    double sum_ape = 0;
  };
  std::map<std::pair<std::string, std::string>, Err> errors;
  for (const auto& f : store.feedback()) {
    Err& e = errors[{f.source_gpu, f.target_gpu}];
    ++e.n;
    e.sum_ape += f.abs_pct_error();
  }
  std::map<std::pair<std::string, std::string>, bool> keys;  // sorted (source, target)
  for (const auto& c : cal.pairs()) keys[{c.source_gpu, c.target_gpu}] = true;
  for (const auto& [k, _] : errors) keys[k] = true;

  JobPairs out{store.path(), cal.residual_sd(), {}, std::move(set.refused)};
  for (const auto& [k, _] : keys) {
    GpuPairStats p;
    p.source_gpu = k.first;
    p.target_gpu = k.second;
    if (const PairCalibration* c = cal.find(k.first, k.second)) {
      p.pairs = c->pairs;
      p.mean_log_residual = c->mean_log_residual;
      p.calibration_log = c->log_bias;
    }
    if (const auto e = errors.find(k); e != errors.end()) {
      p.checked_predictions = e->second.n;
      p.prediction_mape_pct = e->second.sum_ape / static_cast<double>(e->second.n);
    }
    out.gpu_pairs.push_back(std::move(p));
  }
  return out;
}

nlohmann::json to_json(const JobsList& list) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& r : list.runs) {
    nlohmann::json j = run_to_json(r);
    j.erase("features");
    a.push_back(std::move(j));
  }
  return {{"store", list.store}, {"schema_version", list.schema_version}, {"runs", a}};
}

nlohmann::json to_json(const RunRecord& run) { return run_to_json(run); }

nlohmann::json to_json(const JobPairs& pairs) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& p : pairs.gpu_pairs)
    a.push_back({{"source_gpu", p.source_gpu},
                 {"target_gpu", p.target_gpu},
                 {"pairs", p.pairs},
                 {"mean_log_residual", p.mean_log_residual},
                 {"calibration_log", p.calibration_log},
                 {"checked_predictions", p.checked_predictions},
                 {"prediction_mape_pct",
                  p.prediction_mape_pct ? nlohmann::json(*p.prediction_mape_pct) : nlohmann::json(nullptr)}});
  nlohmann::json refused = nlohmann::json::array();
  for (const auto& r : pairs.refused)
    refused.push_back({{"job_key", r.job_key}, {"runs", {r.source_run, r.target_run}}, {"reason", r.reason}});
  return {{"store", pairs.store}, {"residual_sd_log", pairs.residual_sd_log}, {"gpu_pairs", a}, {"refused", refused}};
}

}  // namespace epochcast
