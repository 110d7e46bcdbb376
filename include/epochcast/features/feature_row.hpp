// FeatureRow: per-channel statistics of one run, named and computed exactly as the public
// dataset computes them (docs/dataset.md): mean, sample std, min, 25/50/75 % (linear
// interpolation), max, for every metric that has a dataset name in the metric table.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "epochcast/core/metric.hpp"
#include "epochcast/epoch/segmentation.hpp"
#include "epochcast/trace/trace.hpp"

namespace epochcast {

enum class Stat : std::uint8_t { kMean, kStd, kMin, kP25, kP50, kP75, kMax };
inline constexpr std::size_t kStatCount = 7;
// Column suffixes of the dataset, in Stat order: "mean", "std", "min", "25", "50", "75", "max".
[[nodiscard]] std::span<const std::string_view> stat_suffixes();

// The metrics that carry statistics, in metric-table order (those with a dataset_name).
[[nodiscard]] std::span<const Metric> feature_metrics();
// "<dataset_name>_<suffix>" for every feature metric and stat: the feature schema.
[[nodiscard]] const std::vector<std::string>& feature_names();
[[nodiscard]] std::size_t feature_count();
// Index in feature_names(); nullopt when the metric has no dataset statistics.
[[nodiscard]] std::optional<std::size_t> feature_index(Metric metric, Stat stat);
[[nodiscard]] std::optional<std::size_t> feature_index(std::string_view name);

struct FeatureRow {
  std::vector<double> values;  // feature_names() order; NaN = channel missing
  std::size_t samples = 0;     // samples in the window (0 when built from a dataset row)

  FeatureRow();  // all NaN
  [[nodiscard]] double get(Metric metric, Stat stat) const;
  void set(Metric metric, Stat stat, double value);
  // True when the metric has no finite statistic (the channel was absent or all missing).
  [[nodiscard]] bool missing(Metric metric) const;
};

// The seven statistics of the finite values of `samples` (NaN ignored), like pandas:
// std is the sample standard deviation (n-1; NaN for one value), percentiles interpolate
// linearly between order statistics. All NaN when there is no finite value.
[[nodiscard]] std::array<double, kStatCount> describe(std::span<const double> samples);

// Statistics over the samples from the one nearest `start_s` to the one nearest `end_s`
// (inclusive), the dataset's window. Throws Error(kInvalidArgument) if the window is empty
// or not finite.
[[nodiscard]] FeatureRow extract_features(const Trace& trace, double start_s, double end_s);
// The same over [first detected epoch start, last detected epoch end]. Throws
// Error(kInvalidArgument) when the segmentation holds no epoch.
[[nodiscard]] FeatureRow extract_features(const Trace& trace, const Segmentation& segmentation);

}  // namespace epochcast
