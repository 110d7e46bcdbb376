// Private to src/model: what the fit (stacked_fit.cpp), predict (stacked_model.cpp), the model
// file (model_file.cpp) and the default-model cache (model_cache.cpp) share.
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/model/precision.hpp"
#include "epochcast/model/stacked_model.hpp"
#include "learners.hpp"

namespace epochcast::stacked {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

inline std::string hex(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// ---- how far outside the training GPUs a pair lies (correction_shrink.cpp) ----
[[nodiscard]] std::vector<double> shrink_specs(const GpuSpec& g, Precision precision);
[[nodiscard]] double spec_excess(const std::vector<double>& lo, const std::vector<double>& hi, const GpuSpec& source,
                                 const GpuSpec& target, Precision precision);
[[nodiscard]] double shrink_at(double excess, double trusted_log, double span_log);
void spec_range(const GpuCatalog& catalog, const std::set<std::string>& ids, std::vector<double>& lo,
                std::vector<double>& hi);
// Candidates for the trusted excess are 0, 0.1, 0.2, … up to the largest excess a GPU-held-out
// fold showed: no evidence beyond it (unit test StackedModel.TrustedExcessIsChosenOnGpuFolds).
inline constexpr double kTrustedExcessStep = 0.1;

// ---- FitOptions (fit_options.cpp) ----
[[nodiscard]] LearnerConfig learner_config(const FitOptions& o);
[[nodiscard]] nlohmann::json options_to_json(const FitOptions& o);
[[nodiscard]] FitOptions options_from_json(const nlohmann::json& j);

}  // namespace epochcast::stacked
