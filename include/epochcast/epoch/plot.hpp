// An SVG picture of a trace's channels with the detected epoch boundaries marked.
#pragma once

#include <string>

#include "epochcast/epoch/segmentation.hpp"
#include "epochcast/trace/trace.hpp"

namespace epochcast {

// One panel per channel (min-max scaled), boundaries as vertical lines, the training region
// shaded. Self-contained SVG text.
[[nodiscard]] std::string render_detection_svg(const Trace& trace, const Segmentation& seg);

}  // namespace epochcast
