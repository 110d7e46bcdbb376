#include "uncertainty.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "epochcast/core/metric.hpp"

namespace epochcast {

namespace {

// Relative error of the source epoch time per unit of missing confidence (heuristic: a
// detector at confidence 0.5 is taken to be within ±25 %).
constexpr double kPeriodErrorPerDoubt = 0.5;
// Per missing channel the model falls back on fewer statistics (heuristic).
constexpr double kMissingChannelHalfWidth = 0.05;
// Features outside the training range: trees clamp and linear parts extrapolate (heuristic).
constexpr double kOutOfRangeHalfWidth = 0.15;
constexpr double kZ90 = 1.6448536;

double logo_mape_fraction(const ModelValidation& v, const std::string& gpu) {
  if (const ProtocolScores* logo = v.available ? v.find("logo") : nullptr) {
    if (auto it = logo->per_target_gpu_mape_pct.find(gpu); it != logo->per_target_gpu_mape_pct.end())
      return it->second / 100.0;
    return logo->mape_pct / 100.0;
  }
  return kUnseenGpuMapeFallback;
}

}  // namespace

double half_width_for_mape(double mape_fraction) {
  const double sigma = mape_fraction * std::sqrt(std::numbers::pi / 2);
  return std::log1p(kZ90 * sigma);
}

UncertaintyAssessment assess_uncertainty(const Trace& trace, const Segmentation& seg, const FeatureRow& features,
                                         const StackedModel& model, const GpuSpec& source,
                                         const ModelValidation& validation) {
  UncertaintyAssessment out;
  const auto& sources = model.source_gpus_in_training();
  if (std::find(sources.begin(), sources.end(), source.id) == sources.end()) {
    const double mape = logo_mape_fraction(validation, source.id);
    out.terms.push_back({fmt::format("source GPU {} is never a source in the training data (GPU-out error ~{:.0f} %)",
                                     source.id, mape * 100),
                         half_width_for_mape(mape)});
    out.warnings.push_back(fmt::format(
        "source GPU {} ({}) is never a source in the training data (trained on: {}): its metrics are read through "
        "other GPUs' behaviour; intervals widened",
        source.id, source.name, fmt::join(sources, ", ")));
  }

  const RangeCheck range = model.check_range(features);
  if (!range.out_of_range.empty()) {
    out.terms.push_back({fmt::format("{} source features outside the training range", range.out_of_range.size()),
                         std::log1p(kOutOfRangeHalfWidth)});
    const std::size_t shown = std::min<std::size_t>(range.out_of_range.size(), 4);
    std::vector<std::string> head(range.out_of_range.begin(), range.out_of_range.begin() + shown);
    out.warnings.push_back(fmt::format("{} source features fall outside the training data: {}{}; intervals widened",
                                       range.out_of_range.size(), fmt::join(head, ", "),
                                       range.out_of_range.size() > shown ? ", …" : ""));
  }
  if (!range.missing.empty()) {
    out.terms.push_back({fmt::format("{} channels missing from the trace", range.missing.size()),
                         std::sqrt(static_cast<double>(range.missing.size())) * std::log1p(kMissingChannelHalfWidth)});
    out.warnings.push_back(fmt::format("channels the model uses are missing from the trace: {}; intervals widened",
                                       fmt::join(range.missing, ", ")));
  }

  const double confidence = seg.found ? seg.confidence : std::min(seg.confidence, 0.5);
  if (confidence < kConfidentDetection) {
    const double period_error = kPeriodErrorPerDoubt * (1 - std::clamp(confidence, 0.0, 1.0));
    out.terms.push_back({fmt::format("epoch detection confidence {:.2f}", confidence), std::log1p(period_error)});
    out.warnings.push_back(fmt::format(
        "epoch detection confidence is low ({:.2f}): the source epoch time may be off by ~{:.0f} %; intervals widened",
        confidence, period_error * 100));
  }

  // The dataset was recorded under TensorFlow, which reserves the whole GPU memory; a run that
  // does not comes from another framework, whose per-epoch overheads the model never saw.
  const double used = features.get(Metric::kMemUsed, Stat::kMean);
  const Channel* total_channel = trace.find(Metric::kMemTotal);
  double total = features.get(Metric::kMemTotal, Stat::kMean);
  if (!std::isfinite(total) && total_channel)
    for (double v : total_channel->values)
      if (std::isfinite(v)) total = v;
  if (std::isfinite(used) && std::isfinite(total) && total > 0 && used / total < kTensorFlowMemoryFraction) {
    out.terms.push_back({fmt::format("framework differs from the training data's TensorFlow (memory {:.0f} % used)",
                                     100 * used / total),
                         std::log1p(kFrameworkHalfWidth)});
    out.warnings.push_back(fmt::format(
        "the run uses {:.0f} % of GPU memory; TensorFlow (the training data) reserves ~97 %: another framework, whose "
        "per-epoch overheads differ (docs/predict.md); intervals widened",
        100 * used / total));
  }
  return out;
}

std::vector<UncertaintyTerm> unseen_target_terms(const GpuSpec& target, const ModelValidation& validation) {
  const double mape = logo_mape_fraction(validation, target.id);
  return {{fmt::format("target GPU {} is not in the training data (GPU-out error ~{:.0f} %)", target.id, mape * 100),
           half_width_for_mape(mape)}};
}

Interval widen(double epoch_s, double lo_s, double hi_s, const std::vector<UncertaintyTerm>& common,
               const std::vector<UncertaintyTerm>& extra) {
  double extra_sq = 0;
  for (const auto& t : common) extra_sq += t.log_half_width * t.log_half_width;
  for (const auto& t : extra) extra_sq += t.log_half_width * t.log_half_width;
  const double w_lo = lo_s > 0 && epoch_s > 0 ? std::log(epoch_s / lo_s) : 0.0;
  const double w_hi = hi_s > 0 && epoch_s > 0 ? std::log(hi_s / epoch_s) : 0.0;
  return {epoch_s * std::exp(-std::sqrt(w_lo * w_lo + extra_sq)),
          epoch_s * std::exp(std::sqrt(w_hi * w_hi + extra_sq))};
}

}  // namespace epochcast
