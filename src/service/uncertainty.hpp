// Honest uncertainty: the reasons a prediction is less sure than the model's validation says,
// each a log-space half width added in quadrature to the model's interval.
#pragma once

#include <string>
#include <vector>

#include "epochcast/epoch/segmentation.hpp"
#include "epochcast/features/feature_row.hpp"
#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/model/stacked_model.hpp"
#include "epochcast/service/report.hpp"
#include "epochcast/trace/trace.hpp"

namespace epochcast {

// The GPU-out error of the model when a GPU was never in training: issue 4's leave-one-GPU-out
// target (15 % MAPE), used when no measured logo figure is at hand.
inline constexpr double kUnseenGpuMapeFallback = 0.15;
// ln(hi/epoch) of a nominal 90 % interval for a given mean absolute percentage error, assuming
// log errors roughly normal: sigma = MAPE * sqrt(pi/2), half width = 1.645 sigma.
[[nodiscard]] double half_width_for_mape(double mape_fraction);

// Below this detection confidence the source epoch time itself is in doubt (widens the
// intervals; the report's one-line answer names it).
inline constexpr double kConfidentDetection = 0.8;

// TensorFlow reserves nearly all GPU memory on start (every dataset run: used/total >= 0.956);
// below this the run comes from another framework or allocator.
inline constexpr double kTensorFlowMemoryFraction = 0.9;
// Relative half width for a run from another framework than the training data's TensorFlow
// (docs/predict.md: label conventions and framework overheads, measured on the H200 traces).
inline constexpr double kFrameworkHalfWidth = 0.10;

struct UncertaintyAssessment {
  std::vector<UncertaintyTerm> terms;    // apply to every predicted GPU
  std::vector<std::string> warnings;
};

[[nodiscard]] UncertaintyAssessment assess_uncertainty(const Trace& trace, const Segmentation& segmentation,
                                                       const FeatureRow& features, const StackedModel& model,
                                                       const GpuSpec& source, const ModelValidation& validation);
// Extra terms for a target GPU the model never saw.
[[nodiscard]] std::vector<UncertaintyTerm> unseen_target_terms(const GpuSpec& target,
                                                              const ModelValidation& validation);

struct Interval {
  double lo_s;
  double hi_s;
};
// Each side of the model's interval grows in log space: w' = sqrt(w^2 + sum of terms^2).
[[nodiscard]] Interval widen(double epoch_s, double lo_s, double hi_s, const std::vector<UncertaintyTerm>& common,
                             const std::vector<UncertaintyTerm>& extra);

}  // namespace epochcast
