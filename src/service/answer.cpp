#include "epochcast/service/answer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "epochcast/service/render.hpp"
#include "render_common.hpp"
#include "uncertainty.hpp"

namespace epochcast {

namespace {

std::string why_no_prediction(const PredictReport& r) {
  // predict's own reason (choose_epoch_time): "no epochs detected (…); nothing to predict from: …"
  for (const auto& w : r.warnings)
    if (w.starts_with("no epochs detected")) return w;
  if (!r.source.detected.found)
    return fmt::format("no epochs detected ({})",
                       r.source.detected.reason.empty() ? "no reason given" : r.source.detected.reason);
  return r.warnings.empty() ? "no GPU to predict for" : r.warnings.front();
}

bool extrapolated(const GpuPrediction* p) { return p && !p->measured && !p->in_training_data; }

std::string caveat_of(const PredictReport& r, const Answer& a) {
  if (r.source.epoch_time_from == "detected" && r.source.detected.confidence < kConfidentDetection)
    return fmt::format("the epoch period was detected with confidence {:.2f} only, so the source epoch time itself "
                       "may be off",
                       r.source.detected.confidence);
  for (const GpuPrediction* p : {a.fastest, a.cheapest_gpu})
    if (extrapolated(p))
      return fmt::format("{} is not in the model's training data: its time is extrapolated from catalog specs", p->gpu);
  const auto widest = std::max_element(r.uncertainty.begin(), r.uncertainty.end(),
                                       [](const auto& x, const auto& y) { return x.log_half_width < y.log_half_width; });
  if (widest != r.uncertainty.end())
    return fmt::format("{} (intervals widened ×{:.2f})", widest->reason, std::exp(widest->log_half_width));
  if (r.precision == "auto")
    return "the job's precision was not given: fp32 code is assumed (TF32 where the GPU has it); a mixed-precision "
           "job runs faster on tensor-core GPUs";
  return "";
}

}  // namespace

Answer answer_of(const PredictReport& r) {
  Answer a;
  if (r.predictions.empty()) {
    a.no_prediction = why_no_prediction(r);
    a.text = fmt::format("No prediction: {}.", a.no_prediction);
    return a;
  }
  a.fastest = &r.predictions.front();  // ranked fastest first (rank_by_time)
  if (const auto by_cost = rank_by_cost(r); !by_cost.empty()) {
    a.cheapest_gpu = by_cost.front().prediction;
    a.cheapest = by_cost.front().instance;
  }
  a.caveat = caveat_of(r, a);
  a.text = fmt::format("Fastest: {} at {} per epoch{}", a.fastest->gpu, format_duration(a.fastest->epoch_s),
                       a.fastest->measured ? " (measured)" : "");
  a.text += a.cheapest ? fmt::format("; cheapest: {} on {} at {} per epoch", a.cheapest_gpu->gpu,
                                     instance_label(*a.cheapest), format_usd(a.cheapest->usd_per_epoch))
                       : "; no GPU has a price";
  a.text += a.caveat.empty() ? "." : fmt::format(". Caveat: {}.", a.caveat);
  return a;
}

}  // namespace epochcast
