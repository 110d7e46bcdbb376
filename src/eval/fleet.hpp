// A generated fleet as dcgm-exporter would have exported it, written as OpenMetrics text for
// `promtool tsdb create-blocks-from openmetrics`: GPUs scraped every scrape_s, each running
// jobs (synthetic traces of known period, with pod/namespace/container labels) with idle time
// between them. For watch's tests (tests/integration/watch_*) and bench/watch_scale_bench.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "eval/synthetic.hpp"

namespace epochcast {

struct FleetJobSpec {
  std::map<std::string, std::string> labels;  // pod, namespace, container ({} for bare metal)
  double start_s = 0;                         // from the fleet's start
  SyntheticSpec spec;                         // interval_s is set to the GPU's scrape interval
  std::uint64_t seed = 1;
};

struct FleetGpuSpec {
  std::string uuid, hostname, gpu = "0", model_name = "NVIDIA H100 80GB HBM3";
  double scrape_s = 15;
  std::vector<FleetJobSpec> jobs;  // in time order, not overlapping
  // Stretches [from, to) s from the fleet's start with no sample at all (the series vanish).
  std::vector<std::pair<double, double>> silent;
};

struct FleetJobTruth {
  std::string uuid;
  std::map<std::string, std::string> labels;
  double start_unix_s = 0, end_unix_s = 0;
  double period_s = 0;
  bool has_signature = true;
};

// Writes the families DCGM_FI_DEV_GPU_UTIL, _MEM_COPY_UTIL, _POWER_USAGE, _SM_CLOCK, _FB_USED
// for [start, start + duration) and "# EOF"; returns each job's truth. An idle GPU reads 0 %,
// ~60 W. `skew_s`: the non-utilisation series' timestamps shifted by this (clock skew).
std::vector<FleetJobTruth> write_fleet_openmetrics(const std::vector<FleetGpuSpec>& gpus, double start_unix_s,
                                                   double duration_s, std::ostream& out, double skew_s = 0);

}  // namespace epochcast
