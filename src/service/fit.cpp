// Service::fit and Service::evaluate: the stacked model from a dataset, and its held-out scores.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "epochcast/core/error.hpp"
#include "epochcast/service/service.hpp"
#include "service_impl.hpp"

namespace epochcast {

namespace {

FitOptions to_fit_options(const FitRequest& r) {
  FitOptions o;
  o.seed = r.seed;
  o.include_memory_features = r.memory_features;
  o.residual_over_prior = r.residual_over_prior;
  o.meta_gpu_folds = r.gpu_folds;
  if (r.linear_ridge) {  // the format-3 stack (docs/model.md)
    o.kernel_ridge = false;
    o.xgb_rounds = 150;
    o.xgb_eta = 0.1;
  }
  return o;
}

GpuCatalog catalog_of(const FitRequest& r) {
  return load_gpu_catalog(r.catalog_path.empty() ? default_gpu_catalog_path() : r.catalog_path);
}

Dataset dataset_at(const std::string& path, const GpuCatalog& catalog, const FitRequest& r) {
  DatasetOptions options;
  options.lenient = r.lenient;
  return load_dataset(path.empty() ? default_dataset_path() : path, catalog, options);
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
  Dataset dataset = dataset_at(request.data_path, catalog, request);
  const FitOptions options = to_fit_options(request);
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t cpu0 = std::clock();  // process CPU time, all threads
  StackedModel model = fit_model(dataset, catalog, options, impl_->config.progress);
  FitResult result{.model = std::move(model), .dataset = std::move(dataset), .validation = {}};
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
  result.dataset = dataset_at(request.fit.data_path, catalog, request.fit);
  const FitOptions options = to_fit_options(request.fit);
  const ProgressFn& progress = impl_->config.progress;
  if (!request.test_path.empty()) {
    result.test = dataset_at(request.test_path, catalog, request.fit);
    result.report = evaluate_on_test(result.dataset, *result.test, catalog, options, progress);
  } else {
    result.report = epochcast::evaluate(result.dataset, catalog, *protocol_from_string(request.protocol), options, progress);
  }
  // What `fit` on the same data, catalog and leniency records in its model: ties these figures
  // to a model file (training.data_fingerprint).
  result.data_fingerprint = training_data_fingerprint(result.dataset, make_pairs(result.dataset), catalog);
  return result;
}

}  // namespace epochcast
