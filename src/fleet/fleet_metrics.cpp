// /metrics: running jobs' detections and predictions as gauges (docs/watch.md, "Metrics"),
// written by prometheus-cpp's text serializer; HELP in dcgm-exporter's style ("... (in s).").
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <sstream>

#include "epochcast/fleet/watch.hpp"

namespace epochcast::fleet {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

MetricFamily family(const char* name, const char* help, MetricType type = MetricType::Gauge) {
  MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  return f;
}

void add(MetricFamily& f, std::vector<ClientMetric::Label> labels, double value) {
  ClientMetric m;
  m.label = std::move(labels);
  if (f.type == MetricType::Counter) m.counter.value = value;
  else m.gauge.value = value;
  f.metric.push_back(std::move(m));
}

}  // namespace

std::string fleet_metrics_text(const FleetSnapshot& s) {
  auto epoch = family("epochcast_epoch_seconds", "Epoch time detected on the job's own GPU (in s).");
  auto confidence = family("epochcast_detection_confidence", "Confidence of the job's epoch detection (0 to 1).");
  auto predicted = family("epochcast_predicted_epoch_seconds", "Predicted epoch time of the job on target_gpu (in s).");
  auto bound = family("epochcast_predicted_epoch_bound_seconds",
                      "Bounds of the nominal 90 % interval of the predicted epoch time, bound=lo|hi (in s).");
  auto usd = family("epochcast_predicted_usd_per_epoch",
                    "Predicted on-demand cost of one epoch on target_gpu at a provider's instance (in USD).");
  for (const GpuView& g : s.gpus) {
    if (!g.busy || g.jobs.empty()) continue;  // only running jobs: ended ones are in /v1/fleet
    const JobView& j = g.jobs.back();
    if (!j.analysed) continue;
    std::vector<ClientMetric::Label> base = {
        {"UUID", g.uuid}, {"Hostname", g.hostname}, {"gpu", g.gpu}, {"modelName", g.model_name}, {"epochcast_job", j.id}};
    for (const auto& [k, v] : j.labels) base.push_back({k, v});
    add(confidence, base, j.confidence);
    if (!j.found) continue;
    add(epoch, base, j.epoch_s);
    for (const JobPrediction& p : j.predictions) {
      auto labels = base;
      labels.push_back({"target_gpu", p.target_gpu});
      add(predicted, labels, p.epoch_s);
      auto lo = labels, hi = labels;
      lo.push_back({"bound", "lo"});
      hi.push_back({"bound", "hi"});
      add(bound, lo, p.lo_s);
      add(bound, hi, p.hi_s);
      for (const InstancePrice& c : p.usd_per_epoch) {
        auto l = labels;
        l.push_back({"provider", c.provider});
        l.push_back({"instance", c.instance});
        add(usd, l, c.usd);
      }
    }
  }
  auto errors = family("epochcast_watch_errors_total", "Requests to the PromQL endpoint that failed.", MetricType::Counter);
  add(errors, {}, static_cast<double>(s.errors_total));
  auto queries = family("epochcast_watch_queries_total", "Requests sent to the PromQL endpoint.", MetricType::Counter);
  add(queries, {}, static_cast<double>(s.queries_total));
  auto passes = family("epochcast_watch_passes_total", "Watch passes completed.", MetricType::Counter);
  add(passes, {}, static_cast<double>(s.passes));
  auto last = family("epochcast_watch_last_pass_seconds", "Wall time of the last watch pass (in s).");
  if (s.last_pass) add(last, {}, s.last_pass->seconds);
  auto gpus = family("epochcast_watch_gpus", "GPUs this watch process reads, by state=busy|idle.");
  std::size_t busy = 0;
  for (const GpuView& g : s.gpus) busy += g.busy ? 1 : 0;
  add(gpus, {{"state", "busy"}}, static_cast<double>(busy));
  add(gpus, {{"state", "idle"}}, static_cast<double>(s.gpus.size() - busy));

  std::vector<MetricFamily> families;
  for (auto* f : {&epoch, &confidence, &predicted, &bound, &usd, &errors, &queries, &passes, &last, &gpus})
    if (!f->metric.empty()) families.push_back(std::move(*f));
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace epochcast::fleet
