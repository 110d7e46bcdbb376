#include "epochcast/service/service.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "epochcast/core/error.hpp"
#include "service_impl.hpp"
#include "epochcast/store/job_store.hpp"
#include "validation.hpp"

namespace epochcast {

void Service::Impl::load() {
  std::lock_guard lock(load_mutex);
  if (loaded) return;
  catalog = load_gpu_catalog(config.gpu_catalog_path.empty() ? default_gpu_catalog_path() : config.gpu_catalog_path);
  const std::string prices_path = config.prices_path.empty() ? default_price_catalog_path() : config.prices_path;
  prices = load_price_catalog(prices_path);
  for (const auto& row : prices.rows())
    if (!catalog.find(row.gpu))
      throw Error(ErrorCode::kNotFound,
                  fmt::format("{}: instance {} {} names GPU '{}', which the GPU catalog lacks (it has: {})",
                              prices_path, row.provider, row.instance, row.gpu, catalog.ids_joined()));
  auto first = std::make_shared<ModelState>();
  if (config.model_path.empty()) {
    first->model = default_model(config.progress);
    // default_model() caches the model in a function-local static, destroyed at exit after
    // XGBoost's own globals (a crash in XGBoosterFree); one reference held forever keeps the
    // model alive past that point. The OS reclaims it.
    static const auto* const keep_default_model_alive = new std::shared_ptr<const StackedModel>(first->model);
    (void)keep_default_model_alive;
    first->label = "default (fitted from the bundled dataset)";
  } else {
    first->model = std::make_shared<const StackedModel>(load_model(config.model_path));
    first->label = config.hide_paths ? std::filesystem::path(config.model_path).filename().string() : config.model_path;
  }
  // The default model is fitted from the bundled dataset and catalog by definition (its cache
  // key holds their bytes): its own fingerprint is theirs, with no second read of the dataset.
  const bool is_default = config.model_path.empty();
  const StackedModel& model = *first->model;
  first->validation = load_validation(default_validation_path(), model, [&] {
    return is_default ? model.data_fingerprint() : bundled_data_fingerprint();
  });
  if (config.hide_paths) hide_validation_path(first->validation, default_validation_path());
  first->version = model_version(model);
  if (!config.store_path.empty()) {
    store = std::make_unique<StoreLink>(config.store_path, catalog);
    first->calibration = store->calibration_for(model);
  }
  {
    std::lock_guard state_lock(state_mutex);
    state = std::move(first);
  }
  loaded = true;
}

std::shared_ptr<const ModelState> Service::Impl::current() const {
  std::lock_guard lock(state_mutex);
  return state;
}

void Service::Impl::refresh_calibration() {
  if (!store) return;
  std::lock_guard publish(publish_mutex);
  auto next = std::make_shared<ModelState>(*current());
  next->calibration = store->calibration_for(*next->model);
  std::lock_guard lock(state_mutex);
  state = std::move(next);
}

std::shared_ptr<const ModelState> Service::Impl::swap_model(std::shared_ptr<const StackedModel> model,
                                                            std::string label, ModelValidation validation) {
  std::lock_guard publish(publish_mutex);
  auto next = std::make_shared<ModelState>();
  next->model = std::move(model);
  next->label = std::move(label);
  next->validation = std::move(validation);
  next->version = model_version(*next->model);
  if (store) {
    store->invalidate();  // the residuals are the old model's
    next->calibration = store->calibration_for(*next->model);
  }
  std::lock_guard lock(state_mutex);
  next->generation = state->generation + 1;
  std::shared_ptr<const ModelState> previous = std::move(state);
  state = std::move(next);
  return previous;
}

GpuSpec Service::Impl::resolve_gpu(const std::string& name, const char* what) const {
  if (const GpuSpec* spec = catalog.find(name)) return *spec;
  if (auto spec = catalog.match_smi_name(name)) return *spec;
  const std::vector<std::string> near = catalog.nearest_ids(name);
  const std::string source = catalog.source().empty() ? "data/gpus.csv"
                             : config.hide_paths ? std::filesystem::path(catalog.source()).filename().string()
                                                 : catalog.source();
  std::string suggestion;
  for (std::size_t i = 0; i < near.size(); ++i)
    suggestion += (i == 0 ? "; did you mean " : i + 1 == near.size() ? " or " : ", ") + near[i];
  if (!near.empty()) suggestion += "?";
  const bool is_source = std::string_view(what) == "source";
  throw Error(ErrorCode::kNotFound,
              fmt::format("unknown {} GPU '{}'{} ({}); the catalog ({}) has: {}", what, name, suggestion,
                          is_source ? "add a row to the catalog, name the source GPU by its catalog id, or use an "
                                      "operator's catalog"
                                    : "add a row to the catalog or use an operator's catalog",
                          source, catalog.ids_joined()));
}

Service::Service(ServiceConfig config) : impl_(std::make_unique<Impl>()) { impl_->config = std::move(config); }

Service::~Service() = default;
Service::Service(Service&&) noexcept = default;
Service& Service::operator=(Service&&) noexcept = default;

void Service::load() const { impl_->load(); }

DetectOptions to_detect_options(const DetectRequest& request) {
  request.validate();
  DetectOptions options;
  options.min_confidence = request.min_confidence;
  options.min_epochs = request.min_epochs;
  options.min_period_s = request.min_period_s;
  options.max_period_s = request.max_period_s;
  options.whole_trace = request.whole_trace;
  return options;
}

Segmentation Service::detect(const Trace& trace, const DetectRequest& request) const {
  return detect_epochs(trace, to_detect_options(request));
}

std::vector<std::string> Service::gpu_ids() const {
  impl_->load();
  std::vector<std::string> ids;
  for (const auto& g : impl_->catalog.gpus()) ids.push_back(g.id);
  return ids;
}

std::optional<std::string> Service::catalog_id(std::string_view name) const {
  impl_->load();
  if (const GpuSpec* spec = impl_->catalog.find(name)) return spec->id;
  if (auto spec = impl_->catalog.match_smi_name(name)) return spec->id;
  return std::nullopt;
}

ModelValidation Service::validation() const {
  impl_->load();
  return impl_->current()->validation;
}

}  // namespace epochcast
