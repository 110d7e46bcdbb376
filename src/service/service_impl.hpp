// Service's state, shared by the files that implement its operations (service.cpp, predict.cpp,
// fit.cpp). Loaded on first use: detect and fit need neither the model nor the price catalog.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "epochcast/epoch/detect.hpp"
#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/trace/read.hpp"
#include "epochcast/service/prices.hpp"
#include "epochcast/service/service.hpp"
#include "store_link.hpp"

namespace epochcast {

// The model a prediction answers with, and everything that belongs to that model: replaced as
// a whole by a refit (serve --store), so a request in flight keeps the one it started with.
struct ModelState {
  std::shared_ptr<const StackedModel> model;
  std::string label;
  ModelValidation validation;
  std::string version;       // model_version(): recorded with every run it predicts
  Calibration calibration;   // the job store's, computed for this model (empty without a store)
  std::size_t generation = 0;  // 0: the model loaded at start; +1 per refit
};

struct Service::Impl {
  ServiceConfig config;

  // What load() fills, once.
  std::mutex load_mutex;
  bool loaded = false;
  GpuCatalog catalog;
  PriceCatalog prices;
  std::unique_ptr<StoreLink> store;  // ServiceConfig::store_path (docs/store.md)

  void load();
  // The model state now; a refit or a new measured pair publishes a new one.
  [[nodiscard]] std::shared_ptr<const ModelState> current() const;
  // Recomputes the store calibration for the current model and publishes it (after a run
  // formed a new measured pair).
  void refresh_calibration();
  // Publishes `model` with a calibration computed for it; the previous state.
  std::shared_ptr<const ModelState> swap_model(std::shared_ptr<const StackedModel> model, std::string label,
                                               ModelValidation validation);

  mutable std::mutex state_mutex;  // guards `state` (a pointer copy; never held for long)
  std::shared_ptr<const ModelState> state;
  // Serialises calibration refreshes and swaps, so a swap never publishes a calibration read
  // before a run that a refresh then applies to the old model.
  std::mutex publish_mutex;
  std::mutex refit_mutex;  // one refit at a time
  // The spec of a catalog id or nvidia-smi name; Error(kNotFound) listing the catalog.
  [[nodiscard]] GpuSpec resolve_gpu(const std::string& name, const char* what) const;
};

// The stage options a request stands for (validated first: FieldError).
[[nodiscard]] DetectOptions to_detect_options(const DetectRequest& request);
[[nodiscard]] ReadOptions to_read_options(const TraceRequest& request);

}  // namespace epochcast
