// A picture of a trace's channels with the detected epochs marked: `detect --plot` writes it
// as a file, the HTML report shows it inline. Drawn by the one chart renderer (chart/svg_chart.hpp).
#pragma once

#include <string>

#include "epochcast/chart/svg_chart.hpp"
#include "epochcast/epoch/segmentation.hpp"
#include "epochcast/trace/trace.hpp"

namespace epochcast {

// One lane per channel that varies (the channels that voted first, then the usual activity
// channels, then the rest; at most kMaxPlotLanes), each scaled to its own range (0-100 for
// percentages); the epochs shaded and marked, the detector's busy region shaded behind them.
// A self-contained SVG file by default.
[[nodiscard]] std::string render_detection_svg(const Trace& trace, const Segmentation& seg,
                                               const chart::Frame& frame = {"", "trace channels with detected epochs",
                                                                            true});

// More lanes than this make each too thin to read on one screen.
inline constexpr std::size_t kMaxPlotLanes = 8;

}  // namespace epochcast
