// The published detector (ddps-lab/cloud-hw-trainpred, field notes §1), re-implemented as the
// baseline the benchmark scores against: anomaly score of utilization.gpu -> Savitzky-Golay
// -> min-max (twice) -> peaks (prominence 0.01) -> drop peaks below the mean -> DBSCAN on peak
// positions -> period = span of peaks / (clusters - 1). Second half of the run, <= 1999 samples.
#pragma once

#include "epochcast/epoch/segmentation.hpp"
#include "epochcast/trace/trace.hpp"

namespace epochcast {

[[nodiscard]] Segmentation detect_epochs_published(const Trace& trace);

}  // namespace epochcast
