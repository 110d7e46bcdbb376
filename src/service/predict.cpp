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
#include "epochcast/model/precision.hpp"
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
PredictReport start_report(const Trace& trace, const PredictRequest& request, Precision precision,
                           const ModelState& m) {
  PredictReport report;
  report.epochs = request.epochs;
  report.model = m.label;
  report.validation = m.validation;
  report.precision = to_string(precision);
  report.precision_rule = precision_rule(precision);
  report.source.trace = trace.source;
  for (const auto& w : trace.diagnostics.warnings) report.warnings.push_back(fmt::format("trace: {}", w));
  return report;
}

// Which GPU the trace was recorded on: the request's, else the trace's own name column.
GpuSpec resolve_source(const Trace& trace, const PredictRequest& request, const Service::Impl& s,
                       const ModelState& m, PredictReport& report) {
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
  report.source.in_training_data = contains(m.model->source_gpus_in_training(), spec.id);
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

// The job's own epoch ends (tracker exports: Trace::epoch_markers_s) are ground truth, kept apart
// from detection: reported always, and the epoch time when the request asks for them.
void use_epoch_markers(const Trace& trace, const PredictRequest& request, PredictReport& report, double& epoch_s) {
  const Segmentation& seg = report.source.detected;
  if (trace.epoch_markers_s.size() >= 2) {
    std::vector<double> d;
    for (std::size_t i = 1; i < trace.epoch_markers_s.size(); ++i)
      d.push_back(trace.epoch_markers_s[i] - trace.epoch_markers_s[i - 1]);
    std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
    report.source.marker_epoch_s = d[d.size() / 2];
    report.source.markers = trace.epoch_markers_s.size();
  }
  if (!request.epochs_from_markers) {
    if (report.source.marker_epoch_s > 0)
      report.warnings.push_back(fmt::format("the trace carries the job's own epoch markers: {:.4g} s per epoch "
                                            "({} markers); ask for epochs from markers to predict from them",
                                            report.source.marker_epoch_s, report.source.markers));
    return;
  }
  if (report.source.marker_epoch_s <= 0)
    throw FieldError("epochs_from", fmt::format("markers: {} carries {} epoch marker(s), at least 2 are needed (a "
                                                "W&B `epoch` column, an MLflow `epoch` metric)",
                                                trace.source, trace.epoch_markers_s.size()));
  if (seg.found)
    report.warnings.push_back(fmt::format("epoch time from the job's {} epoch markers: {:.4g} s; detection found "
                                          "{:.4g} s ({:+.1f} %)",
                                          report.source.markers, report.source.marker_epoch_s, seg.period_s,
                                          100 * (seg.period_s / report.source.marker_epoch_s - 1)));
  else
    report.warnings.push_back(fmt::format("epoch time from the job's {} epoch markers: {:.4g} s; detection found "
                                          "none ({})",
                                          report.source.markers, report.source.marker_epoch_s, seg.reason));
  epoch_s = report.source.marker_epoch_s;
  report.source.epoch_time_from = "markers";
  report.source.window_start_s = trace.epoch_markers_s.front();
  report.source.window_end_s = trace.epoch_markers_s.back();
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
  use_epoch_markers(trace, request, report, epoch_s);
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
                            Precision precision, const UncertaintyAssessment& assessment, const ModelState& m,
                            PredictReport& report) {
  GpuPrediction p;
  p.gpu = target.id;
  p.gpu_name = target.name;
  const Prediction raw = m.model->predict(features, epoch_s, source, target, precision);
  if (const ComputePath path = compute_path(precision, target); !path.warning.empty())
    report.warnings.push_back(path.warning);
  p.in_training_data = contains(m.model->target_gpus_in_training(), target.id);
  const std::vector<UncertaintyTerm> extra =
      p.in_training_data ? std::vector<UncertaintyTerm>{} : unseen_target_terms(target, m.validation);
  const Interval widened = widen(raw.epoch_s, raw.lo_s, raw.hi_s, assessment.terms, extra);
  // The job store's measured pairs of this GPU pair correct the model between refits.
  const PairCalibration* c = m.calibration.find(source.id, target.id);
  p.store_calibration_pairs = c ? c->pairs : 0;
  const double cal = c ? c->log_bias : 0.0;
  p.store_calibration_log = cal;
  p.epoch_s = raw.epoch_s * std::exp(cal);
  p.interval_lo_s = widened.lo_s * std::exp(cal);
  p.interval_hi_s = widened.hi_s * std::exp(cal);
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

// Which rows the job store's calibration moved, and by how much.
void add_calibration_warning(PredictReport& report) {
  std::vector<std::string> calibrated;
  for (const auto& p : report.predictions)
    if (p.store_calibration_pairs > 0 && p.store_calibration_log != 0)
      calibrated.push_back(fmt::format("{} x{:.3f} ({} pairs)", p.gpu, std::exp(p.store_calibration_log),
                                       p.store_calibration_pairs));
  if (!calibrated.empty())
    report.warnings.push_back(fmt::format("job store calibration applied: {}", fmt::join(calibrated, ", ")));
}

}  // namespace

PredictReport Service::predict(const Trace& trace, const PredictRequest& request, StageTimes* times) const {
  request.validate();
  // A guessed clock scales every epoch time and price by the unknown real interval (dcgmi dmon
  // -d 100 read at the assumed 1 s: 299 s and $3.05 instead of 29.9 s and $0.31): no answer.
  if (trace.diagnostics.time_axis == TimeAxis::kAssumedInterval)
    throw FieldError("interval_s",
                     fmt::format("is needed: {} has no timestamps and does not state its sampling interval, so every "
                                 "epoch time and price would scale with a guess ({:g} s assumed); give the interval it "
                                 "was logged at in seconds (dcgmi dmon -d 100 or nvidia-smi -lms 100: 0.1)",
                                 trace.source, trace.diagnostics.interval_s));
  impl_->load();
  Impl& s = *impl_;
  // One model for the whole request: a refit swapping it meanwhile does not mix two.
  const std::shared_ptr<const ModelState> state = s.current();
  const ModelState& m = *state;
  if (!request.job_key.empty() && !s.store)
    throw FieldError("job_key", fmt::format("'{}' needs a job store to record the run in (none is configured)", request.job_key));
  using Record = PredictRequest::StoreRecord;
  const bool records = s.store && request.store_record != Record::kNo;
  const bool once = request.store_record == Record::kOnce;
  const Precision precision = parse_precision(request.precision);
  PredictReport report = start_report(trace, request, precision, m);
  report.job_key = request.job_key;
  const GpuSpec source = resolve_source(trace, request, s, m, report);
  const std::vector<GpuSpec> targets = resolve_targets(request, source, s);

  auto t0 = std::chrono::steady_clock::now();
  DetectRequest detect;
  detect.min_confidence = request.min_detection_confidence;
  report.source.detected = detect_epochs(trace, to_detect_options(detect));
  if (times) times->detect_s = seconds_since(t0);

  const double epoch_s = choose_epoch_time(trace, request, report);
  if (epoch_s <= 0) {
    if (records) s.store->record(report, FeatureRow{}, m.version, once);  // every analysed run, found or not
    return report;
  }
  report.source.measured_epoch_s = epoch_s;

  t0 = std::chrono::steady_clock::now();
  const FeatureRow features = extract_features(trace, report.source.window_start_s, report.source.window_end_s);
  if (times) times->features_s = seconds_since(t0);

  const UncertaintyAssessment assessment =
      assess_uncertainty(trace, report.source.detected, features, *m.model, source, m.validation);
  report.uncertainty = assessment.terms;
  // Every extrapolated run carries several of these ("…; intervals widened"): one line says them all.
  if (assessment.warnings.size() > 1) {
    std::string folded = "intervals widened:";
    for (std::size_t i = 0; i < assessment.warnings.size(); ++i) {
      std::string_view w = assessment.warnings[i];
      constexpr std::string_view kTail = "; intervals widened";
      if (w.ends_with(kTail)) w.remove_suffix(kTail.size());
      folded += fmt::format("{} ({}) {}", i ? ";" : "", i + 1, w);
    }
    report.warnings.push_back(std::move(folded));
  } else {
    for (const auto& w : assessment.warnings) report.warnings.push_back(w);
  }

  t0 = std::chrono::steady_clock::now();
  std::vector<std::string> assumption_decides;  // auto: targets where mixed precision would differ > 2x
  for (const GpuSpec& target : targets) {
    GpuPrediction p = target.id == source.id
                          ? measured_row(source, epoch_s, report)
                          : predicted_row(source, target, epoch_s, features, precision, assessment, m, report);
    if (precision == Precision::kAuto && target.id != source.id) {
      const double mixed = m.model->predict(features, epoch_s, source, target, Precision::kFp16).epoch_s;
      const double as_fp32 = m.model->predict(features, epoch_s, source, target, Precision::kAuto).epoch_s;
      if (std::max(as_fp32 / mixed, mixed / as_fp32) > kPrecisionAssumptionWarnRatio)
        assumption_decides.push_back(
            fmt::format("{} {:.2f}x the source's epoch as fp32 code, {:.2f}x as fp16", target.id, as_fp32 / epoch_s, mixed / epoch_s));
    }
    p.instances = instance_costs(s.prices, target.id, p.epoch_s, request.epochs);
    report.predictions.push_back(std::move(p));
  }
  if (!assumption_decides.empty())
    report.warnings.push_back(fmt::format(
        "precision auto assumes fp32 code: {}; where assuming fp16/bf16 autocast changes the answer more than {:g}x: {}; "
        "set the precision (fp16, bf16, fp32) to choose",
        kAutoPrecisionEvidence, kPrecisionAssumptionWarnRatio, fmt::join(assumption_decides, "; ")));
  if (times) times->model_s = seconds_since(t0);
  rank_by_time(report.predictions);
  add_summary_warnings(report);
  add_calibration_warning(report);
  if (records && s.store->record(report, features, m.version, once)) s.refresh_calibration();
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
