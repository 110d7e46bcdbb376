// Service::predict: trace → ranked epoch time and cost on every requested GPU, in named steps.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "cost.hpp"
#include "epochcast/core/error.hpp"
#include "epochcast/epoch/detect.hpp"
#include "epochcast/features/feature_row.hpp"
#include "epochcast/service/render.hpp"
#include "epochcast/service/service.hpp"
#include "service_impl.hpp"
#include "uncertainty.hpp"

namespace epochcast {

namespace {

// A given epoch time further than this from the detected period is worth a warning.
constexpr double kGivenEpochDisagreement = 0.05;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool contains(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// The report's header: what was asked, which model answers, what the reader had to do.
PredictReport start_report(const Trace& trace, const PredictRequest& request, const Service::Impl& s) {
  PredictReport report;
  report.epochs = request.epochs;
  report.model = s.model_label;
  report.validation = s.validation;
  report.source.trace = trace.source;
  for (const auto& w : trace.diagnostics.warnings) report.warnings.push_back(fmt::format("trace: {}", w));
  return report;
}

// Which GPU the trace was recorded on: the request's, else the trace's own name column.
GpuSpec resolve_source(const Trace& trace, const PredictRequest& request, const Service::Impl& s,
                       PredictReport& report) {
  GpuSpec spec;
  if (!request.source_gpu.empty()) {
    spec = s.resolve_gpu(request.source_gpu, "source");
    if (!trace.gpu.name.empty()) {
      report.source.gpu_name_in_trace = trace.gpu.name;
      const auto named = s.catalog.match_smi_name(trace.gpu.name);
      if (named && named->id != spec.id)
        report.warnings.push_back(
            fmt::format("source GPU {} (as given) overrides the trace's GPU name '{}'", spec.id, trace.gpu.name));
    }
  } else if (trace.gpu.name.empty()) {
    throw FieldError("source_gpu", fmt::format("is needed: {} does not name its GPU (one of: {})", trace.source,
                                               s.catalog.ids_joined()));
  } else {
    report.source.gpu_name_in_trace = trace.gpu.name;
    spec = s.resolve_gpu(trace.gpu.name, "source");
  }
  report.source.gpu = spec.id;
  report.source.gpu_name = spec.name;
  report.source.in_training_data = contains(s.model->source_gpus_in_training(), spec.id);
  return spec;
}

// Which GPUs to answer for: the requested ones (each once), the source's own row always along.
std::vector<GpuSpec> resolve_targets(const PredictRequest& request, const GpuSpec& source, const Service::Impl& s) {
  if (request.gpus.empty()) return s.catalog.gpus();
  std::vector<GpuSpec> targets;
  std::set<std::string> seen;
  for (const auto& name : request.gpus) {
    GpuSpec spec = s.resolve_gpu(name, "target");
    if (seen.insert(spec.id).second) targets.push_back(std::move(spec));
  }
  if (!seen.count(source.id)) targets.push_back(source);
  return targets;
}

// The epoch time on the source and the window the features are computed over; 0 when there
// is nothing to predict from (the report then says why).
double choose_epoch_time(const Trace& trace, const PredictRequest& request, PredictReport& report) {
  const Segmentation& seg = report.source.detected;
  double epoch_s = 0;
  if (seg.found && !seg.epochs.empty()) {
    epoch_s = seg.period_s;
    report.source.epoch_time_from = "detected";
    report.source.window_start_s = seg.epochs.front().start_s;
    report.source.window_end_s = seg.epochs.back().end_s;
  } else if (seg.training_end_s > seg.training_start_s) {
    report.source.window_start_s = seg.training_start_s;
    report.source.window_end_s = seg.training_end_s;
  } else {
    report.source.window_start_s = 0;
    report.source.window_end_s = trace.duration_s();
  }
  if (request.source_epoch_s > 0) {
    if (seg.found && std::abs(seg.period_s / request.source_epoch_s - 1) > kGivenEpochDisagreement)
      report.warnings.push_back(
          fmt::format("the given epoch time {:.4g} s differs from the detected period {:.4g} s; using the given time",
                      request.source_epoch_s, seg.period_s));
    epoch_s = request.source_epoch_s;
    report.source.epoch_time_from = "given";
  }
  if (epoch_s <= 0) {
    // An unconfirmed period is often a multiple or fraction of the true one: no prediction
    // is better than a confident-looking wrong one.
    std::string why = fmt::format("no epochs detected ({})", seg.reason.empty() ? "no reason given" : seg.reason);
    if (seg.candidate_period_s > 0) why += fmt::format("; unconfirmed best guess {:.3g} s", seg.candidate_period_s);
    report.warnings.push_back(why + "; nothing to predict from: give the source's epoch time if it is known");
  }
  return epoch_s;
}

// The source's own row: measured, with the spread of its epochs as the interval.
GpuPrediction measured_row(const GpuSpec& source, double epoch_s, const PredictReport& report) {
  GpuPrediction p;
  p.gpu = source.id;
  p.gpu_name = source.name;
  p.measured = true;
  p.in_training_data = report.source.in_training_data;
  p.epoch_s = epoch_s;
  p.interval_lo_s = p.interval_hi_s = epoch_s;
  for (const auto& e : report.source.detected.epochs) {
    p.interval_lo_s = std::min(p.interval_lo_s, e.end_s - e.start_s);
    p.interval_hi_s = std::max(p.interval_hi_s, e.end_s - e.start_s);
  }
  return p;
}

// A target's row: the model's prediction, its interval widened by what makes this trace and
// this GPU less certain than the held-out figures.
GpuPrediction predicted_row(const GpuSpec& source, const GpuSpec& target, double epoch_s, const FeatureRow& features,
                            const UncertaintyAssessment& assessment, const Service::Impl& s) {
  GpuPrediction p;
  p.gpu = target.id;
  p.gpu_name = target.name;
  const Prediction raw = s.model->predict(features, epoch_s, source, target);
  p.in_training_data = contains(s.model->target_gpus_in_training(), target.id);
  const std::vector<UncertaintyTerm> extra =
      p.in_training_data ? std::vector<UncertaintyTerm>{} : unseen_target_terms(target, s.validation);
  const Interval widened = widen(raw.epoch_s, raw.lo_s, raw.hi_s, assessment.terms, extra);
  p.epoch_s = raw.epoch_s;
  p.interval_lo_s = widened.lo_s;
  p.interval_hi_s = widened.hi_s;
  return p;
}

// What the ranked rows leave unsaid: GPUs the model never saw, GPUs without a price.
void add_summary_warnings(PredictReport& report) {
  std::vector<std::string> unseen, unpriced;
  for (const auto& p : report.predictions) {
    if (!p.in_training_data && !p.measured) unseen.push_back(p.gpu);
    if (p.instances.empty()) unpriced.push_back(p.gpu);
  }
  if (!unseen.empty())
    report.warnings.push_back(fmt::format(
        "{} never appear in the training data: their times are extrapolated from catalog specs, intervals widened",
        fmt::join(unseen, ", ")));
  if (!unpriced.empty())
    report.warnings.push_back(fmt::format("no attributable price for {} (data/prices.csv)", fmt::join(unpriced, ", ")));
}

}  // namespace

PredictReport Service::predict(const Trace& trace, const PredictRequest& request, StageTimes* times) const {
  request.validate();
  impl_->load();
  const Impl& s = *impl_;
  PredictReport report = start_report(trace, request, s);
  const GpuSpec source = resolve_source(trace, request, s, report);
  const std::vector<GpuSpec> targets = resolve_targets(request, source, s);

  auto t0 = std::chrono::steady_clock::now();
  DetectRequest detect;
  detect.min_confidence = request.min_detection_confidence;
  report.source.detected = detect_epochs(trace, to_detect_options(detect));
  if (times) times->detect_s = seconds_since(t0);

  const double epoch_s = choose_epoch_time(trace, request, report);
  if (epoch_s <= 0) return report;
  report.source.measured_epoch_s = epoch_s;

  t0 = std::chrono::steady_clock::now();
  const FeatureRow features = extract_features(trace, report.source.window_start_s, report.source.window_end_s);
  if (times) times->features_s = seconds_since(t0);

  const UncertaintyAssessment assessment =
      assess_uncertainty(trace, report.source.detected, features, *s.model, source, s.validation);
  report.uncertainty = assessment.terms;
  for (const auto& w : assessment.warnings) report.warnings.push_back(w);

  t0 = std::chrono::steady_clock::now();
  for (const GpuSpec& target : targets) {
    GpuPrediction p = target.id == source.id ? measured_row(source, epoch_s, report)
                                             : predicted_row(source, target, epoch_s, features, assessment, s);
    p.instances = instance_costs(s.prices, target.id, p.epoch_s, request.epochs);
    report.predictions.push_back(std::move(p));
  }
  if (times) times->model_s = seconds_since(t0);
  rank_by_time(report.predictions);
  add_summary_warnings(report);
  return report;
}

PredictReport Service::predict_file(const TraceRequest& read, const PredictRequest& request, StageTimes* times) const {
  request.validate();  // before a long read
  const auto t0 = std::chrono::steady_clock::now();
  const Trace trace = this->read(read);
  if (times) times->read_s = seconds_since(t0);
  return predict(trace, request, times);
}

std::vector<BatchItem> Service::predict_batch(const std::vector<std::string>& paths, const TraceRequest& read,
                                              const PredictRequest& request) const {
  request.validate();
  impl_->load();
  const ProgressFn& progress = impl_->config.progress;
  std::vector<BatchItem> items;
  std::size_t done = 0;
  for (const auto& path : paths) {
    if (progress) progress(path, done, paths.size());
    BatchItem item;
    item.trace = path;
    try {
      TraceRequest one = read;
      one.path = path;
      if (one.host_path.empty()) one.host_path = sibling_host_trace(path);
      item.report = predict_file(one, request);
    } catch (const Error& e) {
      item.error = e.what();
      item.error_code = to_string(e.code());
    }
    items.push_back(std::move(item));
    ++done;
  }
  if (progress) progress("done", done, paths.size());
  return items;
}

std::string Service::report(const Trace& trace, const PredictRequest& request) const {
  return render_html(predict(trace, request), trace);
}

}  // namespace epochcast
