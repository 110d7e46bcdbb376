// One query's answer (series of many GPUs and metrics) -> per GPU, rows on one time axis: the
// primary metric's scrape times (GPU_UTIL, else the metric with most samples), the other
// metrics' samples attached to the nearest of them (a skew between series up to half a scrape
// interval is absorbed; a sample farther off is dropped and counted).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "epochcast/collect/prometheus.hpp"
#include "epochcast/core/metric.hpp"
#include "promql_client.hpp"

namespace epochcast::fleet {

// The labels that name a job: Kubernetes' pod, namespace and container as dcgm-exporter adds
// them (exported_* when the scrape renamed them because the exporter's own pod has the same),
// and the labels a job key template reads (`key_labels`, the same rule).
[[nodiscard]] Labels job_labels(const Labels& series_labels, const std::vector<std::string>& key_labels = {});

struct GpuRows {
  std::string hostname, gpu, model_name;
  std::vector<std::int64_t> ms;                    // sample times, increasing
  std::vector<std::uint32_t> label_set;            // per row: index into label_sets
  std::vector<Labels> label_sets;                  // job labels seen
  std::map<Metric, std::vector<double>> values;    // per row; NaN where missing
  std::size_t dropped = 0;                         // samples with no row near enough
  [[nodiscard]] std::size_t size() const { return ms.size(); }
};

// Groups by the UUID label (series without one are skipped; counted in `unmatched`). Series of
// metrics outside the metric table are ignored. Rows are merged into `into` after the rows it
// holds (samples at or before its last row are duplicates of a window's border and dropped).
void collect_rows(const std::vector<PrometheusSeries>& series, std::map<std::string, GpuRows>& into,
                  std::size_t& unmatched, const std::vector<std::string>& key_labels = {});

// The metric names watch reads: every metric-table metric with a dcgm-exporter name (host ones
// excluded), as a regex alternation.
[[nodiscard]] const std::string& watched_metric_regex();

}  // namespace epochcast::fleet
