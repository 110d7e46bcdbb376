#include "epochcast/service/service.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>

#include "epochcast/core/error.hpp"
#include "epochcast/epoch/detect.hpp"
#include "epochcast/features/feature_row.hpp"
#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/service/prices.hpp"
#include "uncertainty.hpp"
#include "validation.hpp"

namespace epochcast {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool contains(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

struct Service::Impl {
  ServiceConfig config;
  GpuCatalog catalog;
  PriceCatalog prices;
  std::shared_ptr<const StackedModel> model;
  std::string model_label;
  ModelValidation validation;

  GpuSpec resolve_gpu(const std::string& name, const char* what) const {
    if (const GpuSpec* spec = catalog.find(name)) return *spec;
    if (auto spec = catalog.match_smi_name(name)) return *spec;
    const std::string source = catalog.source().empty() ? "data/gpus.csv"
                               : config.hide_paths ? std::filesystem::path(catalog.source()).filename().string()
                                                   : catalog.source();
    throw Error(ErrorCode::kNotFound,
                fmt::format("unknown {} GPU '{}'; the catalog ({}) has: {}", what, name, source, catalog.ids_joined()));
  }
};

Service::Service(ServiceConfig config) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.config = std::move(config);
  s.catalog = load_gpu_catalog(s.config.gpu_catalog_path.empty() ? default_gpu_catalog_path()
                                                                  : s.config.gpu_catalog_path);
  const std::string prices_path =
      s.config.prices_path.empty() ? default_price_catalog_path() : s.config.prices_path;
  s.prices = load_price_catalog(prices_path);
  for (const auto& row : s.prices.rows())
    if (!s.catalog.find(row.gpu))
      throw Error(ErrorCode::kNotFound,
                  fmt::format("{}: instance {} {} names GPU '{}', which the GPU catalog lacks (it has: {})",
                              prices_path, row.provider, row.instance, row.gpu, s.catalog.ids_joined()));
  if (s.config.model_path.empty()) {
    s.model = default_model(s.config.progress);
    // default_model() caches the model in a function-local static, destroyed at exit after
    // XGBoost's own globals (a crash in XGBoosterFree); one reference held forever keeps the
    // model alive past that point. The OS reclaims it.
    static const auto* const keep_default_model_alive = new std::shared_ptr<const StackedModel>(s.model);
    (void)keep_default_model_alive;
    s.model_label = "default (fitted from the bundled dataset)";
  } else {
    s.model = std::make_shared<const StackedModel>(load_model(s.config.model_path));
    s.model_label = s.config.hide_paths ? std::filesystem::path(s.config.model_path).filename().string()
                                        : s.config.model_path;
  }
  // The default model is fitted from the bundled dataset and catalog by definition (its cache
  // key holds their bytes): its own fingerprint is theirs, with no second read of the dataset.
  const bool is_default = s.config.model_path.empty();
  s.validation = load_validation(default_validation_path(), *s.model, [&] {
    return is_default ? s.model->data_fingerprint() : bundled_data_fingerprint();
  });
}

Service::~Service() = default;
Service::Service(Service&&) noexcept = default;
Service& Service::operator=(Service&&) noexcept = default;

Segmentation Service::analyze(const Trace& trace) const { return detect_epochs(trace); }

std::vector<std::string> Service::gpu_ids() const {
  std::vector<std::string> ids;
  for (const auto& g : impl_->catalog.gpus()) ids.push_back(g.id);
  return ids;
}

const ModelValidation& Service::validation() const { return impl_->validation; }

PredictReport Service::predict(const Trace& trace, const PredictRequest& request, StageTimes* times) const {
  const Impl& s = *impl_;
  if (request.epochs < 1)
    throw Error(ErrorCode::kInvalidArgument, fmt::format("--epochs must be at least 1, got {}", request.epochs));

  PredictReport report;
  report.epochs = request.epochs;
  report.model = s.model_label;
  report.validation = s.validation;
  report.source.trace = trace.source;
  for (const auto& w : trace.diagnostics.warnings) report.warnings.push_back(fmt::format("trace: {}", w));

  // Which GPU the trace was recorded on.
  GpuSpec source_spec;
  if (!request.source_gpu.empty()) {
    source_spec = s.resolve_gpu(request.source_gpu, "source");
    if (!trace.gpu.name.empty()) {
      report.source.gpu_name_in_trace = trace.gpu.name;
      const auto named = s.catalog.match_smi_name(trace.gpu.name);
      if (named && named->id != source_spec.id)
        report.warnings.push_back(fmt::format("--source-gpu {} overrides the trace's GPU name '{}'",
                                              source_spec.id, trace.gpu.name));
    }
  } else if (trace.gpu.name.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: the trace does not name its GPU; pass --source-gpu (one of: {})", trace.source,
                            s.catalog.ids_joined()));
  } else {
    report.source.gpu_name_in_trace = trace.gpu.name;
    source_spec = s.resolve_gpu(trace.gpu.name, "source");
  }
  report.source.gpu = source_spec.id;
  report.source.gpu_name = source_spec.name;
  report.source.in_training_data = contains(s.model->source_gpus_in_training(), source_spec.id);

  // Which GPUs to answer for: the source's own row always comes along.
  std::vector<GpuSpec> targets;
  if (request.gpus.empty()) {
    targets = s.catalog.gpus();
  } else {
    std::set<std::string> seen;
    for (const auto& name : request.gpus) {
      GpuSpec spec = s.resolve_gpu(name, "target");
      if (seen.insert(spec.id).second) targets.push_back(std::move(spec));
    }
    if (!seen.count(source_spec.id)) targets.push_back(source_spec);
  }

  auto t0 = std::chrono::steady_clock::now();
  if (!(request.min_detection_confidence >= 0 && request.min_detection_confidence <= 1))
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--min-confidence must be between 0 and 1, got {}", request.min_detection_confidence));
  DetectOptions detect_options;
  detect_options.min_confidence = request.min_detection_confidence;
  report.source.detected = detect_epochs(trace, detect_options);
  if (times) times->detect_s = seconds_since(t0);
  const Segmentation& seg = report.source.detected;

  // The epoch time on the source and the window the features are computed over.
  // 0 means "not given"; anything else must be a plausible epoch (1 ms to ~4 months: 1e-300 s
  // was taken, and predicted 1.3e-300 s on an H100).
  if (!(request.source_epoch_s == 0 || (request.source_epoch_s >= 1e-3 && request.source_epoch_s <= 1e7)))
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--epoch-s must be a number of seconds from 0.001 to 1e7, got {}", request.source_epoch_s));
  double source_epoch_s = 0;
  if (seg.found && !seg.epochs.empty()) {
    source_epoch_s = seg.period_s;
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
    if (seg.found && std::abs(seg.period_s / request.source_epoch_s - 1) > 0.05)
      report.warnings.push_back(fmt::format("--epoch-s {:.4g} s differs from the detected period {:.4g} s; using --epoch-s",
                                            request.source_epoch_s, seg.period_s));
    source_epoch_s = request.source_epoch_s;
    report.source.epoch_time_from = "given";
  }
  if (source_epoch_s <= 0) {
    // An unconfirmed period is often a multiple or fraction of the true one: no prediction
    // is better than a confident-looking wrong one.
    std::string why = fmt::format("no epochs detected ({})", seg.reason.empty() ? "no reason given" : seg.reason);
    if (seg.candidate_period_s > 0) why += fmt::format("; unconfirmed best guess {:.3g} s", seg.candidate_period_s);
    report.warnings.push_back(why + "; nothing to predict from: pass --epoch-s if the epoch time is known");
    return report;
  }
  report.source.measured_epoch_s = source_epoch_s;

  t0 = std::chrono::steady_clock::now();
  const FeatureRow features =
      extract_features(trace, report.source.window_start_s, report.source.window_end_s);
  if (times) times->features_s = seconds_since(t0);

  const UncertaintyAssessment assessment =
      assess_uncertainty(trace, seg, features, *s.model, source_spec, s.validation);
  report.uncertainty = assessment.terms;
  for (const auto& w : assessment.warnings) report.warnings.push_back(w);

  t0 = std::chrono::steady_clock::now();
  const auto& trained_targets = s.model->target_gpus_in_training();
  for (const GpuSpec& target : targets) {
    GpuPrediction p;
    p.gpu = target.id;
    p.gpu_name = target.name;
    if (target.id == source_spec.id) {
      p.measured = true;
      p.in_training_data = report.source.in_training_data;
      p.epoch_s = source_epoch_s;
      // The spread of the measured epochs, not a model interval.
      p.interval_lo_s = p.interval_hi_s = source_epoch_s;
      for (const auto& e : seg.epochs) {
        p.interval_lo_s = std::min(p.interval_lo_s, e.end_s - e.start_s);
        p.interval_hi_s = std::max(p.interval_hi_s, e.end_s - e.start_s);
      }
    } else {
      const Prediction raw = s.model->predict(features, source_epoch_s, source_spec, target);
      p.in_training_data = contains(trained_targets, target.id);
      const std::vector<UncertaintyTerm> extra =
          p.in_training_data ? std::vector<UncertaintyTerm>{} : unseen_target_terms(target, s.validation);
      const Interval widened = widen(raw.epoch_s, raw.lo_s, raw.hi_s, assessment.terms, extra);
      p.epoch_s = raw.epoch_s;
      p.interval_lo_s = widened.lo_s;
      p.interval_hi_s = widened.hi_s;
    }
    for (const InstancePrice& price : s.prices.for_gpu(target.id)) {
      InstanceCost c;
      c.provider = price.provider;
      c.instance = price.instance;
      c.region = price.region;
      c.gpu_count = price.gpu_count;
      c.gpu_share_usd_h = price.gpu_share_on_demand_usd_h();
      c.usd_per_epoch = c.gpu_share_usd_h * p.epoch_s / 3600.0;
      c.usd_total = c.usd_per_epoch * request.epochs;
      if (auto spot = price.gpu_share_spot_usd_h()) c.spot_usd_per_epoch = *spot * p.epoch_s / 3600.0;
      c.as_of = price.as_of;
      p.instances.push_back(std::move(c));
    }
    std::stable_sort(p.instances.begin(), p.instances.end(),
                     [](const InstanceCost& a, const InstanceCost& b) { return a.usd_per_epoch < b.usd_per_epoch; });
    report.predictions.push_back(std::move(p));
  }
  if (times) times->model_s = seconds_since(t0);
  rank_by_time(report.predictions);

  std::vector<std::string> unseen_targets;
  for (const auto& p : report.predictions)
    if (!p.in_training_data && !p.measured) unseen_targets.push_back(p.gpu);
  if (!unseen_targets.empty())
    report.warnings.push_back(fmt::format(
        "{} never appear in the training data: their times are extrapolated from catalog specs, intervals widened",
        fmt::join(unseen_targets, ", ")));
  std::vector<std::string> unpriced;
  for (const auto& p : report.predictions)
    if (p.instances.empty()) unpriced.push_back(p.gpu);
  if (!unpriced.empty())
    report.warnings.push_back(fmt::format("no attributable price for {} (data/prices.csv)", fmt::join(unpriced, ", ")));
  return report;
}

PredictReport Service::predict_file(const std::string& path, const ReadOptions& read, const PredictRequest& request,
                                    StageTimes* times) const {
  const auto t0 = std::chrono::steady_clock::now();
  const Trace trace = read_trace(path, read);
  if (times) times->read_s = seconds_since(t0);
  return predict(trace, request, times);
}

std::vector<BatchItem> Service::predict_batch(const std::vector<std::string>& paths, const ReadOptions& read,
                                              const PredictRequest& request) const {
  std::vector<BatchItem> items;
  std::size_t done = 0;
  for (const auto& path : paths) {
    if (impl_->config.progress) impl_->config.progress(path, done, paths.size());
    BatchItem item;
    item.trace = path;
    try {
      ReadOptions options = read;
      if (options.host_path.empty()) options.host_path = sibling_host_trace(path);
      item.report = predict_file(path, options, request);
    } catch (const Error& e) {
      item.error = e.what();
      item.error_code = to_string(e.code());
    }
    items.push_back(std::move(item));
    ++done;
  }
  if (impl_->config.progress) impl_->config.progress("done", done, paths.size());
  return items;
}

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool looks_like_metric_log(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  if (name.empty() || name.front() == '.') return false;
  if (ends_with(name, ".host.csv") || ends_with(name, ".truth.json")) return false;
  return ends_with(name, ".csv") || ends_with(name, ".log") || ends_with(name, ".json");
}

}  // namespace

std::vector<std::string> parse_gpu_list(std::string_view list, std::string_view what) {
  std::vector<std::string> out;
  if (list.empty() || list == "all") return out;
  std::string_view rest = list;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  if (out.empty()) throw Error(ErrorCode::kInvalidArgument, fmt::format("{} '{}' names no GPU", what, list));
  return out;
}

std::vector<std::string> expand_trace_paths(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& path : paths) {
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(path, ec);
    // A symlink loop said "does not exist"; the reason is the system's.
    if (ec && ec != std::errc::no_such_file_or_directory)
      throw Error(ErrorCode::kIo, fmt::format("cannot read '{}': {}", path, ec.message()));
    if (ec || !std::filesystem::exists(status))
      throw Error(ErrorCode::kIo, fmt::format("'{}' does not exist", path));
    if (!std::filesystem::is_directory(status)) {
      out.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    // A log-named entry that cannot be stat'ed (a symlink loop, a dangling link) is kept: its row
    // then says why it was not read. (A loop threw filesystem_error: exit 70; a dangling link
    // was skipped without a word.)
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      if (!looks_like_metric_log(entry.path())) continue;
      std::error_code status_ec, link_ec, exists_ec;
      const bool regular = entry.is_regular_file(status_ec);
      const bool broken_link = entry.is_symlink(link_ec) && (status_ec || !entry.exists(exists_ec));
      if (regular || broken_link) found.push_back(entry.path().string());
    }
    if (ec) throw Error(ErrorCode::kIo, fmt::format("cannot list folder '{}': {}", path, ec.message()));
    std::sort(found.begin(), found.end());
    if (found.empty()) throw Error(ErrorCode::kNotFound, fmt::format("folder '{}' holds no metric logs", path));
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

std::string sibling_host_trace(const std::string& trace_path) {
  std::string stem = trace_path;
  if (ends_with(stem, ".smi.csv")) stem.resize(stem.size() - 8);
  else if (ends_with(stem, ".csv")) stem.resize(stem.size() - 4);
  else return {};
  const std::string host = stem + ".host.csv";
  std::error_code ec;
  return host != trace_path && std::filesystem::is_regular_file(host, ec) ? host : std::string();
}

}  // namespace epochcast
