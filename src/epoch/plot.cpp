#include "epochcast/epoch/plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "epochcast/core/metric.hpp"

namespace epochcast {

std::string render_detection_svg(const Trace& trace, const Segmentation& seg, const chart::Frame& frame) {
  chart::LaneChart c;
  c.frame = frame;
  c.time_s = &trace.time_s;
  c.duration_s = std::max(trace.duration_s(), 1e-6);
  c.interval_s = trace.median_interval_s();
  std::vector<const Channel*> shown;
  auto add = [&](const Channel* ch) {
    if (!ch || shown.size() >= kMaxPlotLanes || std::find(shown.begin(), shown.end(), ch) != shown.end()) return;
    double lo = INFINITY, hi = -INFINITY;
    for (double v : ch->values)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    if (!(hi > lo)) return;  // constant or empty: nothing to see
    const MetricInfo& mi = info(ch->metric);
    if (mi.unit == "%") lo = std::min(lo, 0.0), hi = std::max(hi, 100.0);
    shown.push_back(ch);
    c.lanes.push_back({std::string(mi.tag), std::string(mi.unit), &ch->values, lo, hi});
  };
  for (const auto& tag : seg.channels)
    if (auto m = metric_by_tag(tag)) add(trace.find(*m));
  for (Metric m : {Metric::kGpuUtil, Metric::kMemUtil, Metric::kPower, Metric::kSmClock, Metric::kHostCpuUtil,
                   Metric::kMemUsed})
    add(trace.find(m));
  for (const auto& ch : trace.channels) add(&ch);
  for (const auto& e : seg.epochs) c.epochs.push_back({e.start_s, e.end_s});
  c.region = {seg.training_start_s, seg.training_end_s};
  c.title = seg.found ? fmt::format("{}: period {:.3f} s, confidence {:.2f}, {} epochs", trace.source, seg.period_s,
                                    seg.confidence, seg.epochs.size())
                      : fmt::format("{}: no period found ({})", trace.source, seg.reason);
  c.caption = seg.epochs.empty()
                  ? "each lane scaled to its own range; shaded: the busy region the detector searched"
                  : "each lane scaled to its own range; shaded spans: the detected epochs (green: epoch start, red "
                    "dashed: end of the last)";
  return chart::render(c);
}

}  // namespace epochcast
