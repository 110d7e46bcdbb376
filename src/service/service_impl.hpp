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

namespace epochcast {

struct Service::Impl {
  ServiceConfig config;

  // What load() fills, once.
  std::mutex load_mutex;
  bool loaded = false;
  GpuCatalog catalog;
  PriceCatalog prices;
  std::shared_ptr<const StackedModel> model;
  std::string model_label;
  ModelValidation validation;

  void load();
  // The spec of a catalog id or nvidia-smi name; Error(kNotFound) listing the catalog.
  [[nodiscard]] GpuSpec resolve_gpu(const std::string& name, const char* what) const;
};

// The stage options a request stands for (validated first: FieldError).
[[nodiscard]] DetectOptions to_detect_options(const DetectRequest& request);
[[nodiscard]] ReadOptions to_read_options(const TraceRequest& request);

}  // namespace epochcast
