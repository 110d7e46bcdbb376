// Service::fit and Service::evaluate: the stacked model from a dataset, and its held-out scores.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "epochcast/core/error.hpp"
#include "epochcast/model/fit_parameters.hpp"
#include "epochcast/service/service.hpp"
#include "service_impl.hpp"
#include "epochcast/store/job_store.hpp"
#include "store_link.hpp"
#include "validation.hpp"

namespace epochcast {

namespace {

// The request's parameters over the defaults, in order (validate() has checked each).
FitOptions to_fit_options(const FitRequest& r) {
  FitOptions o;
  for (const auto& [name, value] : r.parameters)
    if (const FitParameter* p = find_fit_parameter(name); p != nullptr) (void)p->set(o, value);
  return o;
}

GpuCatalog catalog_of(const FitRequest& r) {
  return load_gpu_catalog(r.catalog_path.empty() ? default_gpu_catalog_path() : r.catalog_path);
}

// The columns a message lists before "and N more".
constexpr std::size_t kListedColumns = 12;

std::string column_list(const std::vector<std::string>& names) {
  std::vector<std::string> head(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(std::min(names.size(), kListedColumns)));
  std::string out = fmt::format("{}", fmt::join(head, ", "));
  if (names.size() > head.size()) out += fmt::format(" and {} more", names.size() - head.size());
  return out;
}

// The statistic columns of the bundled dataset's header: what a complete dataset carries (the
// metric table has a few more, e.g. the memory clock, that the 2022 data never had).
std::set<std::string> bundled_columns() {
  std::ifstream in(default_dataset_path());
  std::string header;
  std::getline(in, header);
  std::set<std::string> out;
  std::stringstream cells(header);
  for (std::string c; std::getline(cells, c, ',');) {
    if (!c.empty() && c.back() == '\r') c.pop_back();
    out.insert(c);
  }
  return out;
}

// A dataset lacking statistic columns the bundled one has would fit a model that silently
// never learns from them (a 10-column file fitted like the full one): refused unless the
// request allows it, and then said aloud (`warnings`).
Dataset dataset_at(const std::string& path, const GpuCatalog& catalog, const FitRequest& r,
                   std::vector<std::string>* warnings = nullptr, std::vector<std::string>* fitted_without = nullptr) {
  DatasetOptions options;
  options.lenient = r.lenient;
  const std::string file = path.empty() ? default_dataset_path() : path;
  Dataset ds = load_dataset(file, catalog, options);
  if (ds.diagnostics.missing_columns.empty()) return ds;
  const std::set<std::string> complete = bundled_columns();
  std::vector<std::string> missing;
  for (const auto& c : ds.diagnostics.missing_columns)
    if (complete.count(c)) missing.push_back(c);
  if (missing.empty()) return ds;
  const std::size_t expected = std::count_if(feature_names().begin(), feature_names().end(),
                                             [&](const std::string& n) { return complete.count(n) > 0; });
  const std::string what = fmt::format("{} lacks {} of the {} metric statistic columns of the bundled dataset ({})",
                                       file, missing.size(), expected, column_list(missing));
  // The front end names its switch for the field ("--allow-missing is needed: …").
  if (!r.allow_missing)
    throw FieldError("allow_missing", fmt::format("is needed: {}; a model fitted on it would never learn from them "
                                                  "(allowed, those features are missing for every run)",
                                                  what));
  if (warnings) warnings->push_back(fmt::format("{}: fitted with those features missing for every run", what));
  if (fitted_without) *fitted_without = missing;
  return ds;
}

// Checked before fitting. save_model writes beside the path and renames into place, which over
// a device, FIFO or directory replaces the node itself (as root, `-o /dev/full` did).
void check_output_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw Error(ErrorCode::kIo, fmt::format("cannot write model file '{}': it exists and is not a regular file "
                                            "(the model is written beside it and renamed into place)",
                                            path));
  const fs::path parent = fs::path(path).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw Error(ErrorCode::kIo,
                fmt::format("cannot write model file '{}': folder '{}': {}", path, dir, std::strerror(errno)));
}

}  // namespace

FitResult Service::fit(const FitRequest& request, const std::string& output_path) const {
  request.validate();
  if (!output_path.empty()) check_output_path(output_path);
  const GpuCatalog catalog = catalog_of(request);
  std::vector<std::string> warnings, missing_columns;
  Dataset dataset = dataset_at(request.data_path, catalog, request, &warnings, &missing_columns);
  const FitOptions options = to_fit_options(request);
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t cpu0 = std::clock();  // process CPU time, all threads
  std::vector<RunPair> pairs = make_pairs(dataset);
  StoreTraining store;
  if (!request.store_path.empty())  // the reused-key check predicts with the bundled model
    store = add_store_training(request.store_path, *default_model(impl_->config.progress), catalog, dataset, pairs);
  StackedModel model = fit_model_on_pairs(dataset, pairs, catalog, options, impl_->config.progress);
  FitResult result{.model = std::move(model),
                   .dataset = std::move(dataset),
                   .validation = {},
                   .store_pairs = store.pairs,
                   .store_rows = compress_ids(store.rows),
                   .store_refused = store.refused,
                   .store_calibration_only = store.calibration_only,
                   .store_calibration_only_note = store.calibration_only_note,
                   .warnings = std::move(warnings),
                   .missing_columns = std::move(missing_columns)};
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result.cpu_seconds = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
  result.interval_level = options.interval_level;
  if (!output_path.empty()) save_model(result.model, output_path);
  result.validation = bundled_validation(result.model);
  return result;
}

EvaluateResult Service::evaluate(const EvaluateRequest& request) const {
  request.validate();
  const GpuCatalog catalog = catalog_of(request.fit);
  EvaluateResult result;
  result.dataset = dataset_at(request.fit.data_path, catalog, request.fit, &result.warnings);
  const FitOptions options = to_fit_options(request.fit);
  const ProgressFn& progress = impl_->config.progress;
  if (!request.test_path.empty()) {
    result.test = dataset_at(request.test_path, catalog, request.fit, &result.warnings);
    result.report = evaluate_on_test(result.dataset, *result.test, catalog, options, progress);
  } else {
    result.report = epochcast::evaluate(result.dataset, catalog, *protocol_from_string(request.protocol), options, progress);
  }
  // What `fit` on the same data, catalog and leniency records in its model: ties these figures
  // to a model file (training.data_fingerprint).
  result.data_fingerprint = training_data_fingerprint(result.dataset, make_pairs(result.dataset), catalog);
  return result;
}

StoreEvaluation Service::evaluate_store(const std::string& store_path) const {
  impl_->load();
  const JobStore store(store_path, StoreMode::kReadOnly);
  return epochcast::evaluate_store(store.runs(), *impl_->current()->model, impl_->catalog);
}

namespace {

// Every word holding a '/' cut to its last part: "/srv/data/x.csv + store /var/jobs.db runs 1-4"
// becomes "x.csv + store jobs.db runs 1-4" (serve: clients must not learn paths).
std::string without_folders(const std::string& text) {
  std::string out, word;
  auto flush = [&] {
    const auto slash = word.rfind('/');
    out += slash == std::string::npos || slash + 1 == word.size() ? word : word.substr(slash + 1);
    word.clear();
  };
  for (char c : text) {
    if (c == ' ') {
      flush();
      out += c;
    } else {
      word += c;
    }
  }
  flush();
  return out;
}

ModelInfo info_of(const ModelState& m, bool hide_paths) {
  const std::string& source = m.model->dataset_source();
  return {.label = m.label,
          .version = m.version,
          .trained_on = hide_paths ? without_folders(source) : source,
          .generation = m.generation};
}

const StoreLink& store_of(const Service::Impl& s) {
  if (!s.store)
    throw Error(ErrorCode::kInvalidArgument, "no job store: the model is refitted from one (serve --store DB)");
  return *s.store;
}

}  // namespace

ModelInfo Service::model_info() const {
  impl_->load();
  return info_of(*impl_->current(), impl_->config.hide_paths);
}

std::vector<PairPredictionError> Service::prediction_errors() const {
  impl_->load();
  return impl_->store ? impl_->store->prediction_errors() : std::vector<PairPredictionError>{};
}

bool Service::has_store() const { return !impl_->config.store_path.empty(); }

std::pair<std::size_t, std::int64_t> Service::store_pairable_runs() const {
  impl_->load();
  return store_of(*impl_).pairable_runs();
}

std::optional<RefitResult> Service::refit(const std::string& model_file) const {
  impl_->load();
  Impl& s = *impl_;
  const StoreLink& store = store_of(s);
  std::unique_lock running(s.refit_mutex, std::try_to_lock);
  if (!running.owns_lock()) return std::nullopt;
  if (!model_file.empty()) check_output_path(model_file);
  const std::shared_ptr<const ModelState> before = s.current();
  // The served model's own fit options on the bundled dataset, the store's pairs joined as
  // `fit --store` joins them; the reused-key check predicts with the model in use.
  Dataset dataset = load_dataset(default_dataset_path(), s.catalog, {});
  std::vector<RunPair> pairs = make_pairs(dataset);
  const StoreTraining added = add_store_training(store.path(), *before->model, s.catalog, dataset, pairs);
  if (added.pairs == 0)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("the job store holds no measured pair to learn from (runs of one job key on two GPU types "
                            "with a measured epoch time){}{}",
                            added.calibration_only ? "; " + added.calibration_only_note : "",
                            added.refused.empty() ? "" : fmt::format("; refused: {}", fmt::join(added.refused, "; "))));
  const auto t0 = std::chrono::steady_clock::now();
  auto model = std::make_shared<const StackedModel>(
      fit_model_on_pairs(dataset, pairs, s.catalog, before->model->options(), s.config.progress));
  RefitResult result;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!model_file.empty()) {
    save_model(*model, model_file);  // beside the path, renamed into place
    result.model_file = s.config.hide_paths ? std::filesystem::path(model_file).filename().string() : model_file;
  }
  ModelValidation validation = bundled_validation(*model);
  if (s.config.hide_paths) hide_validation_path(validation, default_validation_path());
  const std::string label = fmt::format("refit {} (bundled dataset + {} measured pairs of the job store)",
                                        before->generation + 1, added.pairs);
  const auto previous = s.swap_model(model, label, std::move(validation));
  result.previous = info_of(*previous, s.config.hide_paths);
  result.model = info_of(*s.current(), s.config.hide_paths);
  result.store_pairs = added.pairs;
  result.store_rows = compress_ids(added.rows);
  result.refused = added.refused;
  result.calibration_only = added.calibration_only;
  return result;
}

PublicEvaluation Service::evaluate_public(const std::string& catalog_path) const {
  const GpuCatalog catalog = load_gpu_catalog(catalog_path.empty() ? default_gpu_catalog_path() : catalog_path);
  PublicEvaluation out;
  out.table = load_public_throughput(default_public_throughput_path(), default_public_names_path(), catalog);
  out.report = epochcast::evaluate_public(out.table, catalog);
  out.fitted_on_all = fit_scaling_prior(out.table, catalog, {}, false).prior;
  return out;
}

}  // namespace epochcast
