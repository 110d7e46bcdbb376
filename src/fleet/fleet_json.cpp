// GET /v1/fleet: the snapshot as JSON (docs/watch.md, "GET /v1/fleet").
#include <cmath>
#include <nlohmann/json.hpp>

#include "epochcast/fleet/watch.hpp"
#include "epochcast/trace/read.hpp"

namespace epochcast::fleet {

namespace {
// Seconds rounded to the millisecond: the JSON stays readable, nothing measured is that fine.
double ms_round(double v) { return std::round(v * 1000) / 1000; }

nlohmann::json job_json(const JobView& j) {
  nlohmann::json preds = nlohmann::json::array();
  for (const JobPrediction& p : j.predictions) {
    nlohmann::json usd = nlohmann::json::array();
    for (const InstancePrice& c : p.usd_per_epoch)
      usd.push_back({{"provider", c.provider}, {"instance", c.instance}, {"usd", std::round(c.usd * 1e5) / 1e5}});
    preds.push_back({{"target_gpu", p.target_gpu},
                     {"epoch_s", ms_round(p.epoch_s)},
                     {"lo_s", ms_round(p.lo_s)},
                     {"hi_s", ms_round(p.hi_s)},
                     {"usd_per_epoch", usd}});
  }
  return {{"id", j.id},
          {"labels", j.labels},
          {"job_key", j.job_key.empty() ? nlohmann::json(nullptr) : nlohmann::json(j.job_key)},
          {"store_run_id", j.store_run_id > 0 ? nlohmann::json(j.store_run_id) : nlohmann::json(nullptr)},
          {"start", format_iso8601_utc(j.start_unix_s)},
          {"end", j.end_unix_s ? nlohmann::json(format_iso8601_utc(*j.end_unix_s)) : nlohmann::json(nullptr)},
          {"samples", j.samples},
          {"analysed", j.analysed},
          {"found", j.found},
          {"epoch_s", j.found ? nlohmann::json(ms_round(j.epoch_s)) : nlohmann::json(nullptr)},
          {"confidence", std::round(j.confidence * 1000) / 1000},
          {"why", j.why},
          {"predictions", preds}};
}
}  // namespace

std::string fleet_json(const FleetSnapshot& s, int indent) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const GpuView& g : s.gpus) {
    nlohmann::json jobs = nlohmann::json::array();
    for (const JobView& j : g.jobs) jobs.push_back(job_json(j));
    gpus.push_back({{"uuid", g.uuid},
                    {"hostname", g.hostname},
                    {"gpu", g.gpu},
                    {"model_name", g.model_name},
                    {"catalog_id", g.catalog_id ? nlohmann::json(*g.catalog_id) : nlohmann::json(nullptr)},
                    {"state", g.busy ? "busy" : "idle"},
                    {"jobs", jobs}});
  }
  nlohmann::json last = nullptr;
  if (s.last_pass)
    last = {{"started", format_iso8601_utc(s.last_pass->started_unix_s)},
            {"seconds", ms_round(s.last_pass->seconds)},
            {"queries", s.last_pass->queries},
            {"samples", s.last_pass->samples},
            {"errors", s.last_pass->errors},
            {"analysed", s.last_pass->analysed},
            {"ok", s.last_pass->ok}};
  const nlohmann::json doc = {{"source", s.source},
                              {"shard", std::to_string(s.shard.index) + "/" + std::to_string(s.shard.count)},
                              {"every_s", s.every_s},
                              {"passes", s.passes},
                              {"last_pass", last},
                              {"errors_total", s.errors_total},
                              {"queries_total", s.queries_total},
                              {"gpus", gpus}};
  return doc.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace epochcast::fleet
