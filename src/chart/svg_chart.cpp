#include "epochcast/chart/svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace epochcast::chart {

namespace {

// Lanes: wide enough for a 24-hour trace to keep its shape (one min/max per pixel column),
// narrow enough for the report's 1100 px page.
constexpr double kWidth = 1060;
constexpr double kLeft = 150;    // lane names and ranges
constexpr double kRight = 20;
constexpr double kPlotWidth = kWidth - kLeft - kRight;
constexpr double kLaneHeight = 70;
constexpr double kLaneGap = 18;
constexpr double kTitleHeight = 24;
// Bars.
constexpr double kBarRow = 26;
constexpr double kBarLabelWidth = 190;
constexpr double kBarArea = 640;
constexpr double kBarValueRoom = 130;  // the value written after the longest bar
constexpr int kBarTicks = 4;

constexpr const char* kFont = R"(font-family="system-ui,-apple-system,'Segoe UI',sans-serif")";

std::string open_svg(const Frame& f, const char* kind, double width, double height) {
  std::string svg = fmt::format(R"(<svg {}class="ec-chart {}" viewBox="0 0 {:.0f} {:.0f}" width="{:.0f}" height="{:.0f}" )",
                                f.standalone ? R"(xmlns="http://www.w3.org/2000/svg" )" : "", kind, width, height,
                                width, height);
  if (!f.id.empty()) svg += fmt::format(R"(id="{}" )", escape(f.id));
  svg += fmt::format(R"(role="img" aria-label="{}" {} font-size="11">)", escape(f.aria_label), kFont);
  if (f.standalone) svg += R"(<rect width="100%" height="100%" fill="white"/>)";
  return svg;
}

// A tick step of 1, 2 or 5 × 10^k seconds, or whole minutes and hours, giving 4 to 10 ticks.
double time_tick(double duration_s) {
  static const double kSteps[] = {1e-3, 2e-3, 5e-3, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120,
                                  300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800};
  for (double s : kSteps)
    if (duration_s / s <= 10) return s;
  return std::pow(10.0, std::ceil(std::log10(duration_s / 10)));
}

std::string time_label(double t, double step) {
  if (step >= 3600 && std::fmod(step, 3600) == 0) return fmt::format("{:g} h", t / 3600);
  if (step >= 60 && std::fmod(step, 60) == 0) return fmt::format("{:g} min", t / 60);
  return fmt::format("{:g} s", t);
}

// Min and max per pixel column, so spikes survive; a run of empty columns longer than three
// sampling intervals is a gap (missing samples) and lifts the pen.
std::string lane_path(const LaneChart& c, const Lane& lane, double y0) {
  const auto& time_s = *c.time_s;
  const auto& values = *lane.values;
  const int columns = static_cast<int>(kPlotWidth);
  std::vector<double> lo(columns, std::numeric_limits<double>::infinity());
  std::vector<double> hi(columns, -std::numeric_limits<double>::infinity());
  const double span = std::max(c.duration_s, 1e-9);
  for (std::size_t i = 0; i < values.size() && i < time_s.size(); ++i) {
    if (!std::isfinite(values[i])) continue;
    const int b = std::clamp(static_cast<int>(time_s[i] / span * (columns - 1)), 0, columns - 1);
    lo[b] = std::min(lo[b], values[i]);
    hi[b] = std::max(hi[b], values[i]);
  }
  auto y_of = [&](double v) { return y0 + kLaneHeight - (v - lane.lo) / (lane.hi - lane.lo) * kLaneHeight; };
  const double gap_columns = std::max(1.0, 3 * c.interval_s / span * (columns - 1));
  std::string d;
  bool pen_down = false;
  int empty_run = 0;
  for (int b = 0; b < columns; ++b) {
    if (!std::isfinite(lo[b])) {
      if (++empty_run > gap_columns) pen_down = false;
      continue;
    }
    empty_run = 0;
    const double x = kLeft + b;
    d += fmt::format("{}{:.1f},{:.1f}", pen_down ? "L" : "M", x, y_of(hi[b]));
    if (lo[b] != hi[b]) d += fmt::format("L{:.1f},{:.1f}", x, y_of(lo[b]));
    pen_down = true;
  }
  return d;
}

}  // namespace

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::string render(const LaneChart& c) {
  const double top = c.title.empty() ? 4 : kTitleHeight + 4;
  const std::size_t lanes = std::max<std::size_t>(c.lanes.size(), 1);
  const double bottom = top + static_cast<double>(lanes) * (kLaneHeight + kLaneGap) - kLaneGap;
  const double height = bottom + (c.caption.empty() ? 36 : 52);
  const double duration = std::max(c.duration_s, 1e-9);
  auto x_of = [&](double t) { return kLeft + std::clamp(t / duration, 0.0, 1.0) * (kPlotWidth - 1); };

  std::string svg = open_svg(c.frame, "ec-lanes", kWidth, height);
  if (!c.title.empty())
    svg += fmt::format(R"(<text class="chart-title" x="{:.0f}" y="17" font-size="13" fill="#222">{}</text>)", kLeft,
                       escape(c.title));
  if (c.region.end_s > c.region.start_s)
    svg += fmt::format(R"(<rect class="region" x="{:.1f}" y="{:.0f}" width="{:.1f}" height="{:.0f}" fill="{}"/>)",
                       x_of(c.region.start_s), top, x_of(c.region.end_s) - x_of(c.region.start_s), bottom - top,
                       kRegionShade);
  for (std::size_t i = 0; i < c.epochs.size(); ++i) {
    const double xa = x_of(c.epochs[i].start_s), xb = x_of(c.epochs[i].end_s);
    svg += fmt::format(
        R"(<rect class="epoch-span" x="{:.1f}" y="{:.0f}" width="{:.1f}" height="{:.0f}" fill="{}"><title>epoch {}: {:.2f} s to {:.2f} s</title></rect>)",
        xa, top, std::max(xb - xa, 0.5), bottom - top, kEpochShade[i % 2], i + 1, c.epochs[i].start_s,
        c.epochs[i].end_s);
  }
  for (std::size_t i = 0; i < c.lanes.size(); ++i) {
    const Lane& lane = c.lanes[i];
    const double y0 = top + static_cast<double>(i) * (kLaneHeight + kLaneGap);
    svg += fmt::format(R"(<g class="lane channel" data-channel="{}">)", escape(lane.name));
    svg += fmt::format(R"(<text class="lane-label" x="4" y="{:.0f}" font-size="12" fill="#333">{}</text>)", y0 + 14,
                       escape(lane.name));
    svg += fmt::format(R"(<text class="lane-range" x="4" y="{:.0f}" font-size="10" fill="#777">{:.4g} to {:.4g} {}</text>)",
                       y0 + 30, lane.lo, lane.hi, escape(lane.unit));
    svg += fmt::format(R"(<rect x="{:.0f}" y="{:.0f}" width="{:.0f}" height="{:.0f}" fill="none" stroke="#ccc"/>)",
                       kLeft, y0, kPlotWidth, kLaneHeight);
    svg += fmt::format(R"(<path d="{}" fill="none" stroke="{}" stroke-width="1.2"/>)", lane_path(c, lane, y0),
                       kLaneColors[i % std::size(kLaneColors)]);
    svg += "</g>";
  }
  if (c.lanes.empty())
    svg += fmt::format(R"(<text x="{:.0f}" y="{:.0f}" fill="#777">no channel with values to draw</text>)", kLeft,
                       top + kLaneHeight / 2);
  // Epoch boundaries over the lanes: each start, and the end of the last epoch.
  for (std::size_t i = 0; i < c.epochs.size(); ++i) {
    svg += fmt::format(
        R"(<line class="epoch-marker" x1="{0:.1f}" x2="{0:.1f}" y1="{1:.0f}" y2="{2:.0f}" stroke="{3}" stroke-width="1.5"/>)",
        x_of(c.epochs[i].start_s), top, bottom, kEpochStart);
    if (i + 1 == c.epochs.size())
      svg += fmt::format(
          R"(<line class="epoch-marker" data-boundary="last-end" x1="{0:.1f}" x2="{0:.1f}" y1="{1:.0f}" y2="{2:.0f}" stroke="{3}" stroke-width="1.5" stroke-dasharray="4 3"/>)",
          x_of(c.epochs[i].end_s), top, bottom, kLastEpochEnd);
  }
  const double step = time_tick(duration);
  svg += R"(<g class="axis x-axis">)";
  for (double t = 0; t <= duration * (1 + 1e-9); t += step) {
    svg += fmt::format(R"(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1:.0f}" y2="{2:.0f}" stroke="#999"/>)", x_of(t), bottom,
                       bottom + 4);
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.0f}" fill="#555" text-anchor="middle">{}</text>)", x_of(t),
                       bottom + 16, escape(time_label(t, step)));
  }
  svg += fmt::format(R"(<text class="axis-label" x="{:.0f}" y="{:.0f}" fill="#555" text-anchor="end">time from the first sample</text>)",
                     kWidth - kRight, bottom + 30);
  svg += "</g>";
  if (!c.caption.empty())
    svg += fmt::format(R"(<text class="caption" x="{:.0f}" y="{:.0f}" fill="#555">{}</text>)", kLeft, bottom + 46,
                       escape(c.caption));
  svg += "</svg>";
  if (c.frame.standalone) svg += "\n";
  return svg;
}

std::string render(const BarChart& c) {
  const auto format = c.format ? c.format : [](double v) { return fmt::format("{:.3g}", v); };
  double max_v = 0;
  for (const Bar& b : c.bars)
    max_v = std::max({max_v, std::isfinite(b.value) ? b.value : 0.0, std::isfinite(b.hi) ? b.hi : 0.0});
  if (max_v <= 0) max_v = 1;
  const double axis_y = 10 + static_cast<double>(c.bars.size()) * kBarRow + 4;
  const double height = axis_y + (c.axis_label.empty() ? 24 : 40);
  auto x_of = [&](double v) { return kBarLabelWidth + std::max(v, 0.0) / max_v * kBarArea; };

  std::string svg = open_svg(c.frame, "ec-bars", kBarLabelWidth + kBarArea + kBarValueRoom, height);
  for (std::size_t i = 0; i < c.bars.size(); ++i) {
    const Bar& b = c.bars[i];
    const double y = 10 + static_cast<double>(i) * kBarRow;
    const char* fill = b.kind == Bar::Kind::kMeasured ? kBarMeasured : b.kind == Bar::Kind::kSeen ? kBarSeen : kBarUnseen;
    svg += fmt::format(R"(<text class="gpu-label" x="{:.0f}" y="{:.1f}" font-size="13" text-anchor="end" fill="#222">{}</text>)",
                       kBarLabelWidth - 8, y + 15, escape(b.label));
    svg += fmt::format(
        R"(<rect class="bar{}" data-gpu="{}" data-epoch-s="{:.6g}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.0f}" fill="{}"><title>{}: {}</title></rect>)",
        b.kind == Bar::Kind::kMeasured ? " measured" : "", escape(b.key), b.value, kBarLabelWidth, y + 3,
        std::max(x_of(b.value) - kBarLabelWidth, 1.0), kBarRow - 8, fill, escape(b.key), escape(format(b.value)));
    const bool whiskers = std::isfinite(b.lo) && std::isfinite(b.hi) && b.hi > b.lo;
    if (whiskers) {
      const double yc = y + kBarRow / 2 - 1;
      svg += fmt::format(
          R"(<g class="interval" data-gpu="{}"><line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="#111" stroke-width="1.5"/><line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="#111"/><line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="#111"/></g>)",
          escape(b.key), x_of(b.lo), x_of(b.hi), yc, yc, x_of(b.lo), x_of(b.lo), yc - 5, yc + 5, x_of(b.hi), x_of(b.hi),
          yc - 5, yc + 5);
    }
    svg += fmt::format(R"(<text class="value-label" x="{:.1f}" y="{:.1f}" font-size="12" fill="#222">{}{}</text>)",
                       x_of(whiskers ? std::max(b.value, b.hi) : b.value) + 6, y + 15, escape(format(b.value)),
                       escape(b.note));
  }
  svg += R"(<g class="axis x-axis">)";
  svg += fmt::format(R"(<line x1="{0:.0f}" x2="{1:.0f}" y1="{2:.0f}" y2="{2:.0f}" stroke="#999"/>)", kBarLabelWidth,
                     kBarLabelWidth + kBarArea, axis_y);
  for (int i = 0; i <= kBarTicks; ++i)
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.0f}" fill="#555" text-anchor="middle">{}</text>)",
                       x_of(max_v * i / kBarTicks), axis_y + 15, escape(format(max_v * i / kBarTicks)));
  if (!c.axis_label.empty())
    svg += fmt::format(R"(<text class="axis-label" x="{:.0f}" y="{:.0f}" fill="#555" text-anchor="middle">{}</text>)",
                       kBarLabelWidth + kBarArea / 2, axis_y + 31, escape(c.axis_label));
  svg += "</g></svg>";
  if (c.frame.standalone) svg += "\n";
  return svg;
}

}  // namespace epochcast::chart
