#include "gpu_samples.hpp"
#include "epochcast/core/nan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace epochcast::fleet {

namespace {

std::string get(const Labels& labels, const char* key) {
  const auto it = labels.find(key);
  return it == labels.end() ? std::string() : it->second;
}

struct MetricSeries {
  Metric metric;
  const PrometheusSeries* series;
};

}  // namespace

Labels job_labels(const Labels& series_labels, const std::vector<std::string>& key_labels) {
  Labels out;
  const auto take = [&](const std::string& key) {
    const std::string exported = get(series_labels, ("exported_" + key).c_str());
    const std::string plain = get(series_labels, key.c_str());
    if (!exported.empty()) out[key] = exported;
    else if (!plain.empty()) out[key] = plain;
  };
  for (const char* key : {"pod", "namespace", "container"}) take(key);
  for (const std::string& key : key_labels) take(key);
  return out;
}

const std::string& watched_metric_regex() {
  static const std::string names = [] {
    std::string s;
    for (const MetricInfo& row : metric_table())
      if (!row.dcgm_name.empty() && !row.host) s += (s.empty() ? "" : "|") + std::string(row.dcgm_name);
    return s;
  }();
  return names;
}

void collect_rows(const std::vector<PrometheusSeries>& all, std::map<std::string, GpuRows>& into,
                  std::size_t& unmatched, const std::vector<std::string>& key_labels) {
  std::map<std::string, std::vector<MetricSeries>> by_uuid;
  for (const auto& s : all) {
    const std::string uuid = get(s.labels, "UUID");
    if (uuid.empty()) {
      ++unmatched;
      continue;
    }
    const auto metric = metric_by_dcgm_name(get(s.labels, "__name__"));
    if (!metric) continue;
    by_uuid[uuid].push_back({*metric, &s});
  }
  for (auto& [uuid, list] : by_uuid) {
    GpuRows& rows = into[uuid];
    // The primary metric: GPU utilisation, else the one with most samples.
    std::map<Metric, std::size_t> points;
    for (const auto& ms : list) points[ms.metric] += ms.series->points.size();
    Metric primary = points.begin()->first;
    if (points.contains(Metric::kGpuUtil)) primary = Metric::kGpuUtil;
    else
      for (const auto& [m, n] : points)
        if (n > points[primary]) primary = m;

    // The primary's times, each with its series' job labels (a pod change is a new series).
    struct Stamp {
      std::int64_t ms;
      std::uint32_t label_set;
      double value;
    };
    std::vector<Stamp> stamps;
    const std::int64_t after = rows.ms.empty() ? std::numeric_limits<std::int64_t>::min() : rows.ms.back();
    for (const auto& ms : list) {
      if (ms.metric != primary) continue;
      const Labels& l = ms.series->labels;
      if (rows.hostname.empty()) rows.hostname = get(l, "Hostname");
      if (rows.gpu.empty()) rows.gpu = get(l, "gpu");
      if (rows.model_name.empty()) rows.model_name = get(l, "modelName");
      const Labels job = job_labels(l, key_labels);
      auto found = std::find(rows.label_sets.begin(), rows.label_sets.end(), job);
      const auto set = static_cast<std::uint32_t>(found - rows.label_sets.begin());
      if (found == rows.label_sets.end()) rows.label_sets.push_back(job);
      for (const auto& [t, v] : ms.series->points) {
        if (!std::isfinite(t)) continue;
        const auto stamp = static_cast<std::int64_t>(std::llround(t * 1000));
        if (stamp > after) stamps.push_back({stamp, set, v});
      }
    }
    std::sort(stamps.begin(), stamps.end(), [](const Stamp& a, const Stamp& b) { return a.ms < b.ms; });
    stamps.erase(std::unique(stamps.begin(), stamps.end(), [](const Stamp& a, const Stamp& b) { return a.ms == b.ms; }),
                 stamps.end());
    if (stamps.empty()) continue;

    const std::size_t base = rows.ms.size();
    const std::size_t n = base + stamps.size();
    for (const auto& s : stamps) {
      rows.ms.push_back(s.ms);
      rows.label_set.push_back(s.label_set);
    }
    for (auto& [m, col] : rows.values) col.resize(n, kNaN);
    auto& primary_col = rows.values[primary];
    primary_col.resize(n, kNaN);
    for (std::size_t i = 0; i < stamps.size(); ++i)
      primary_col[base + i] = plausible(primary, stamps[i].value) ? stamps[i].value : kNaN;

    // Half the median spacing of the primary's times: how far off another metric's sample may be.
    std::vector<std::int64_t> gaps;
    for (std::size_t i = base + 1; i < n; ++i) gaps.push_back(rows.ms[i] - rows.ms[i - 1]);
    std::int64_t tolerance = 500;  // one sample only: half a second
    if (!gaps.empty()) {
      std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
      tolerance = std::max<std::int64_t>(1, gaps[gaps.size() / 2] / 2);
    }
    const auto first = rows.ms.begin() + static_cast<std::ptrdiff_t>(base);
    for (const auto& ms : list) {
      if (ms.metric == primary) continue;
      auto& col = rows.values[ms.metric];
      col.resize(n, kNaN);
      for (const auto& [t, v] : ms.series->points) {
        if (!std::isfinite(t)) continue;
        const auto stamp = static_cast<std::int64_t>(std::llround(t * 1000));
        auto it = std::lower_bound(first, rows.ms.end(), stamp);
        std::int64_t best = std::numeric_limits<std::int64_t>::max();
        auto best_it = rows.ms.end();
        if (it != rows.ms.end()) best = *it - stamp, best_it = it;
        if (it != first && stamp - *(it - 1) < best) best = stamp - *(it - 1), best_it = it - 1;
        if (best_it == rows.ms.end() || best > tolerance) {
          if (stamp > after) ++rows.dropped;
          continue;
        }
        col[static_cast<std::size_t>(best_it - rows.ms.begin())] = plausible(ms.metric, v) ? v : kNaN;
      }
    }
  }
}

}  // namespace epochcast::fleet
