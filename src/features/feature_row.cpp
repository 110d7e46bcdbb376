#include "epochcast/features/feature_row.hpp"
#include "epochcast/core/nan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "epochcast/core/error.hpp"
#include "sort_finite.hpp"

namespace epochcast {
namespace {

constexpr std::array<std::string_view, kStatCount> kSuffixes{"mean", "std", "min", "25",
                                                             "50",   "75",  "max"};

struct Schema {
  std::vector<Metric> metrics;
  std::vector<std::string> names;
  std::array<int, kMetricCount> slot{};  // metric -> position in metrics, -1 if none
};

const Schema& schema() {
  static const Schema s = [] {
    Schema out;
    out.slot.fill(-1);
    for (const MetricInfo& m : metric_table()) {
      if (m.dataset_name.empty()) continue;
      out.slot[static_cast<std::size_t>(m.id)] = static_cast<int>(out.metrics.size());
      out.metrics.push_back(m.id);
      for (std::string_view suffix : kSuffixes)
        out.names.push_back(std::string(m.dataset_name) + "_" + std::string(suffix));
    }
    return out;
  }();
  return s;
}

// Linear-interpolated percentile of sorted values (numpy's default, as pandas uses).
double percentile_sorted(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

std::size_t nearest_index(const std::vector<double>& time_s, double t) {
  auto it = std::lower_bound(time_s.begin(), time_s.end(), t);
  if (it == time_s.end()) return time_s.size() - 1;
  const auto i = static_cast<std::size_t>(it - time_s.begin());
  if (i > 0 && std::abs(time_s[i - 1] - t) <= std::abs(time_s[i] - t)) return i - 1;
  return i;
}

}  // namespace

std::span<const std::string_view> stat_suffixes() { return kSuffixes; }
std::span<const Metric> feature_metrics() { return schema().metrics; }
const std::vector<std::string>& feature_names() { return schema().names; }
std::size_t feature_count() { return schema().names.size(); }

std::optional<std::size_t> feature_index(Metric metric, Stat stat) {
  const auto m = static_cast<std::size_t>(metric);
  if (m >= kMetricCount || schema().slot[m] < 0) return std::nullopt;
  return static_cast<std::size_t>(schema().slot[m]) * kStatCount + static_cast<std::size_t>(stat);
}

std::optional<std::size_t> feature_index(std::string_view name) {
  const auto& names = schema().names;
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return i;
  return std::nullopt;
}

FeatureRow::FeatureRow() : values(feature_count(), kNaN) {}

double FeatureRow::get(Metric metric, Stat stat) const {
  const auto i = feature_index(metric, stat);
  return i ? values[*i] : kNaN;
}

void FeatureRow::set(Metric metric, Stat stat, double value) {
  const auto i = feature_index(metric, stat);
  if (!i) throw Error(ErrorCode::kInvalidArgument,
                      "metric '" + std::string(info(metric).tag) + "' has no dataset statistics");
  values[*i] = value;
}

bool FeatureRow::missing(Metric metric) const {
  for (std::size_t s = 0; s < kStatCount; ++s)
    if (std::isfinite(get(metric, static_cast<Stat>(s)))) return false;
  return true;
}

std::array<double, kStatCount> describe(std::span<const double> samples) {
  std::array<double, kStatCount> out;
  out.fill(kNaN);
  std::vector<double> v;
  detail::sort_finite(samples, v);
  if (v.empty()) return out;
  const auto n = static_cast<double>(v.size());
  double sum = 0;
  for (double x : v) sum += x;
  const double mean = sum / n;
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  out[0] = mean;
  out[1] = v.size() > 1 ? std::sqrt(ss / (n - 1)) : kNaN;
  out[2] = v.front();
  out[3] = percentile_sorted(v, 0.25);
  out[4] = percentile_sorted(v, 0.50);
  out[5] = percentile_sorted(v, 0.75);
  out[6] = v.back();
  return out;
}

FeatureRow extract_features(const Trace& trace, double start_s, double end_s) {
  if (!std::isfinite(start_s) || !std::isfinite(end_s) || end_s < start_s)
    throw Error(ErrorCode::kInvalidArgument,
                "feature window must be finite with start <= end (got " +
                    std::to_string(start_s) + " .. " + std::to_string(end_s) + ")");
  if (trace.time_s.empty())
    throw Error(ErrorCode::kInvalidArgument, "trace '" + trace.source + "' has no samples");
  const std::size_t first = nearest_index(trace.time_s, start_s);
  const std::size_t last = nearest_index(trace.time_s, end_s);
  FeatureRow row;
  row.samples = last >= first ? last - first + 1 : 0;
  for (Metric m : feature_metrics()) {
    const Channel* ch = trace.find(m);
    if (ch == nullptr || ch->values.size() != trace.time_s.size() || row.samples == 0) continue;
    const auto stats =
        describe(std::span<const double>(ch->values).subspan(first, row.samples));
    for (std::size_t s = 0; s < kStatCount; ++s) row.set(m, static_cast<Stat>(s), stats[s]);
  }
  return row;
}

FeatureRow extract_features(const Trace& trace, const Segmentation& segmentation) {
  if (segmentation.epochs.empty())
    throw Error(ErrorCode::kInvalidArgument,
                "no epochs detected in '" + trace.source +
                    "': the features need the window from the first to the last epoch" +
                    (segmentation.reason.empty() ? "" : " (" + segmentation.reason + ")"));
  return extract_features(trace, segmentation.epochs.front().start_s,
                          segmentation.epochs.back().end_s);
}

}  // namespace epochcast
