// StackedModel: the schema and predict (a fitted model is immutable).
#include "epochcast/model/stacked_model.hpp"

#include <fcntl.h>   // open: O_EXCL
#include <sys/stat.h>  // mkdir
#include <unistd.h>  // write, close

#include <Eigen/Dense>
#include <fmt/format.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "epochcast/core/error.hpp"
#include "epochcast/core/read_file.hpp"
#include "learners.hpp"
#include "pair_features.hpp"
#include "stacked_internal.hpp"

namespace epochcast {

using namespace stacked;

// ---- schema ----

std::vector<std::string> pair_feature_names(bool include_memory_features) {
  return pair_schema(include_memory_features).names;
}

std::string model_schema_hash(bool include_memory_features) {
  std::uint64_t h = fnv1a("epochcast-model-v" + std::to_string(kModelFormatVersion));
  h = fnv1a("target=log(target_epoch_s/source_epoch_s)", h);
  for (const auto& n : pair_schema(include_memory_features).names) h = fnv1a(n + ";", h);
  return hex(h);
}

// ---- StackedModel ----

StackedModel::StackedModel() = default;
StackedModel::~StackedModel() = default;
StackedModel::StackedModel(StackedModel&&) noexcept = default;
StackedModel& StackedModel::operator=(StackedModel&&) noexcept = default;

const std::string& StackedModel::schema_hash() const {
  static const std::string without = model_schema_hash(false), with = model_schema_hash(true);
  return options_.include_memory_features ? with : without;
}

std::vector<std::string> StackedModel::learner_names() const {
  std::vector<std::string> out;
  for (const auto& l : learners_) out.push_back(l->name());
  return out;
}

double StackedModel::prior_log_ratio_for(const FeatureRow& f, std::span<const double> x, const GpuSpec& source,
                                         const GpuSpec& target, Precision precision) const {
  if (!options_.residual_over_prior) return 0.0;
  const double fitted = prior_log_ratio(pair_schema(options_.include_memory_features), x);
  if (!options_.calibrated_prior) return fitted;
  // Inside the training GPUs' range the correction was fitted over format 5's prior: keep that
  // pair; outside, hand over to the prior calibrated on the public table as the correction is shrunk.
  const double s = correction_shrink(source, target, precision);
  if (s >= 1.0) return fitted;
  return s * fitted + (1.0 - s) * scaling_log_ratio(scaling_prior_.params(precision_class(precision)), f.get(Metric::kGpuUtil, Stat::kMean) / 100.0,
                                                    scaling_prior_.reference, source, target, precision);
}

double StackedModel::correction_shrink(const GpuSpec& source, const GpuSpec& target, Precision precision) const {
  if (!(options_.shrink_span_log > 0) || spec_log_lo_.empty()) return 1.0;
  return shrink_at(spec_excess(spec_log_lo_, spec_log_hi_, source, target, precision), trusted_excess_log_,
                   options_.shrink_span_log);
}

void StackedModel::predict_pair_features(std::span<const double> x, double prior, double shrink,
                                         std::span<double> per_learner_log, double& stack_log, bool unseen_gpu) const {
  const std::vector<double>& w = unseen_gpu ? meta_weights_unseen_ : meta_weights_;
  stack_log = prior;
  for (std::size_t i = 0; i < learners_.size(); ++i) {
    // Only the learned correction is clamped; the prior is not bounded by the training range.
    const double correction = shrink * std::clamp(learners_[i]->predict(x), log_ratio_lo_, log_ratio_hi_);
    per_learner_log[i] = prior + correction;
    stack_log += w[i] * correction;
  }
}

Prediction StackedModel::predict(const FeatureRow& source_features, double source_epoch_s,
                                 const GpuSpec& source, const GpuSpec& target, Precision precision) const {
  if (learners_.empty()) throw Error(ErrorCode::kInternal, "predict on a model that was not fitted");
  if (!(source_epoch_s > 0) || !std::isfinite(source_epoch_s))
    throw Error(ErrorCode::kInvalidArgument,
                "source epoch time must be a positive number of seconds, got " + std::to_string(source_epoch_s));
  if (source_features.values.size() != feature_count())
    throw Error(ErrorCode::kInvalidArgument, "feature row has the wrong size");
  const PairSchema& schema = pair_schema(options_.include_memory_features);
  double x_buf[256];
  std::vector<double> x_heap;
  std::span<double> x;
  if (schema.names.size() <= std::size(x_buf)) {
    x = std::span<double>(x_buf, schema.names.size());
  } else {
    x_heap.resize(schema.names.size());
    x = x_heap;
  }
  pair_features(schema, source_features, source_epoch_s, source, target, x);
  // A GPU the model never saw gets the interval calibrated on GPU-held-out folds (when fitted).
  const bool seen = std::binary_search(source_gpus_.begin(), source_gpus_.end(), source.id) &&
                    std::binary_search(target_gpus_.begin(), target_gpus_.end(), target.id);
  double per[16];
  double stack = 0;
  const double prior = prior_log_ratio_for(source_features, x, source, target, precision);
  const double shrink = correction_shrink(source, target, precision);
  predict_pair_features(x, prior, shrink, std::span<double>(per, learners_.size()), stack, !seen);
  // An unseen GPU: the wider of the GPU-held-out folds' interval and, where the correction was
  // shrunk toward the prior, the prior's own leave-one-GPU-out interval on the public table.
  const double prior_q = options_.calibrated_prior ? scaling_prior_.params(precision_class(precision)).interval_q_log : 0.0;
  const double q = seen ? interval_q_log_
                        : std::max({interval_q_log_, interval_unseen_q_log_, (1.0 - shrink) * prior_q});
  Prediction p;
  p.epoch_s = source_epoch_s * std::exp(stack);
  p.lo_s = source_epoch_s * std::exp(stack - q);
  p.hi_s = source_epoch_s * std::exp(stack + q);
  p.per_learner.reserve(learners_.size());
  for (std::size_t i = 0; i < learners_.size(); ++i)
    p.per_learner.push_back({learners_[i]->name(), source_epoch_s * std::exp(per[i])});
  return p;
}

RangeCheck StackedModel::check_range(const FeatureRow& f) const {
  RangeCheck out;
  const PairSchema& schema = pair_schema(options_.include_memory_features);
  std::set<Metric> missing;
  for (std::size_t i : schema.source_features) {
    if (i >= feature_min_.size() || !std::isfinite(feature_min_[i])) continue;  // unseen in training
    const double v = f.values[i];
    const Metric m = feature_metrics()[i / kStatCount];
    if (!std::isfinite(v)) {
      // std is NaN for a single sample: not a missing channel.
      if (!f.missing(m)) continue;
      missing.insert(m);
      continue;
    }
    if (v < feature_min_[i] || v > feature_max_[i]) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "=%.4g (training %.4g..%.4g)", v, feature_min_[i], feature_max_[i]);
      out.out_of_range.push_back(feature_names()[i] + buf);
    }
  }
  for (Metric m : missing) out.missing.emplace_back(info(m).dataset_name);
  return out;
}

}  // namespace epochcast
