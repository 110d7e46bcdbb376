// The one SVG chart renderer: the time-series lanes of a trace with its epochs marked (the HTML
// report's trace chart and `detect --plot`) and the horizontal bars of a ranked prediction. One
// look everywhere: the same palette, type, axes and class names (`ec-chart`, `lane`, `channel`,
// `epoch-span`, `epoch-marker`, `bar`, `axis`, `axis-label`). Plain values in, SVG text out;
// every string is escaped here.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace epochcast::chart {

// The palette (the report's legend and its browser test name these colours).
inline constexpr const char* kLaneColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#d62728"};
inline constexpr const char* kEpochShade[] = {"#e8f0fb", "#f4f8fd"};  // alternate epochs
inline constexpr const char* kRegionShade = "#fbf7e8";                 // the detector's busy region
inline constexpr const char* kEpochStart = "#2a7d2a";
inline constexpr const char* kLastEpochEnd = "#c0392b";
inline constexpr const char* kBarMeasured = "#2a7d2a";
inline constexpr const char* kBarSeen = "#3b6fb6";
inline constexpr const char* kBarUnseen = "#9db6da";

// &, <, >, " and ' as entities.
[[nodiscard]] std::string escape(std::string_view s);

// Where the SVG goes: its own file (xmlns, white background) or inline in an HTML page.
struct Frame {
  std::string id;          // element id; "" for none
  std::string aria_label;  // what the picture shows, for screen readers
  bool standalone = false;
};

struct Lane {
  std::string name;                          // "gpu_util_pct"
  std::string unit;                          // "%"
  const std::vector<double>* values = nullptr;  // one per time sample; NaN: missing
  double lo = 0, hi = 1;                     // the range drawn (lo < hi)
};

struct Span {
  double start_s = 0, end_s = 0;
};

struct LaneChart {
  Frame frame;
  std::string title;                           // above the lanes; "" for none
  const std::vector<double>* time_s = nullptr;  // seconds from the first sample
  double duration_s = 0;
  double interval_s = 1;                       // sampling interval: longer holes lift the pen
  std::vector<Lane> lanes;
  std::vector<Span> epochs;                    // shaded, a marker at each start and the last end
  Span region;                                 // shaded behind the epochs when end > start
  std::string caption;                         // under the time axis
};
[[nodiscard]] std::string render(const LaneChart& chart);

struct Bar {
  std::string key;         // data-key: a catalog id
  std::string label;       // left of the bar
  double value = 0;        // seconds
  double lo = 0, hi = 0;   // whiskers when hi > lo
  enum class Kind { kMeasured, kSeen, kUnseen } kind = Kind::kSeen;
  std::string note;        // after the value: " (measured)"
};

struct BarChart {
  Frame frame;
  std::vector<Bar> bars;   // drawn top to bottom in this order
  std::function<std::string(double)> format;  // value and tick labels
  std::string axis_label;  // under the axis: "epoch time"
};
[[nodiscard]] std::string render(const BarChart& chart);

}  // namespace epochcast::chart
