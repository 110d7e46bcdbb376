#include "epochcast/epoch/plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "epochcast/core/metric.hpp"

namespace epochcast {
namespace {

constexpr double kWidth = 1000;
constexpr double kPanelHeight = 90;
constexpr double kLeft = 150;
constexpr double kRight = 15;
constexpr double kTop = 30;
constexpr std::size_t kMaxPanels = 8;
constexpr std::size_t kMaxPoints = 1500;  // per channel: min/max per bucket keeps spikes visible

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string render_detection_svg(const Trace& trace, const Segmentation& seg) {
  // Panels: the channels that voted, then the usual activity channels, then the rest;
  // constant or empty channels are left out.
  std::vector<const Channel*> panels;
  auto varies = [](const Channel& ch) {
    double lo = INFINITY, hi = -INFINITY;
    for (double v : ch.values)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    return hi > lo;
  };
  auto add = [&](const Channel* ch) {
    if (!ch || panels.size() >= kMaxPanels || !varies(*ch)) return;
    if (std::find(panels.begin(), panels.end(), ch) == panels.end()) panels.push_back(ch);
  };
  for (const auto& tag : seg.channels)
    if (auto m = metric_by_tag(tag)) add(trace.find(*m));
  for (Metric m : {Metric::kGpuUtil, Metric::kMemUtil, Metric::kPower, Metric::kSmClock, Metric::kHostCpuUtil,
                   Metric::kMemUsed})
    add(trace.find(m));
  for (const auto& ch : trace.channels) add(&ch);
  const double height = kTop + kPanelHeight * static_cast<double>(std::max<std::size_t>(1, panels.size())) + 30;
  const double duration = std::max(trace.duration_s(), 1e-9);
  const double plot_w = kWidth - kLeft - kRight;
  auto x_of = [&](double t) { return kLeft + plot_w * t / duration; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "viewBox=\"0 0 {:.0f} {:.0f}\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      kWidth, height, kWidth, height);
  const std::string title =
      seg.found ? fmt::format("{}: period {:.3f} s, confidence {:.2f}, {} epochs", trace.source,
                              seg.period_s, seg.confidence, seg.epochs.size())
                : fmt::format("{}: no period found ({})", trace.source, seg.reason);
  svg += fmt::format("<text x=\"{:.0f}\" y=\"18\" font-size=\"13\">{}</text>\n", kLeft, escape(title));
  if (seg.training_end_s > seg.training_start_s) {
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"{:.0f}\" fill=\"#eef4ff\"/>\n",
        x_of(seg.training_start_s), kTop, x_of(seg.training_end_s) - x_of(seg.training_start_s),
        kPanelHeight * static_cast<double>(panels.size()));
  }
  const std::size_t n = trace.size();
  for (std::size_t p = 0; p < panels.size(); ++p) {
    const auto& values = panels[p]->values;
    double lo = INFINITY, hi = -INFINITY;
    for (double v : values)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    if (!(hi > lo)) hi = lo + 1;
    const double y0 = kTop + kPanelHeight * static_cast<double>(p);
    auto y_of = [&](double v) { return y0 + 8 + (kPanelHeight - 16) * (1 - (v - lo) / (hi - lo)); };
    const auto& meta = info(panels[p]->metric);
    svg += fmt::format("<text x=\"5\" y=\"{:.0f}\">{}</text>\n", y0 + kPanelHeight / 2, escape(std::string(meta.tag)));
    svg += fmt::format("<text x=\"5\" y=\"{:.0f}\" fill=\"#777\">{:.4g}..{:.4g} {}</text>\n",
                       y0 + kPanelHeight / 2 + 14, lo, hi, escape(std::string(meta.unit)));
    svg += fmt::format("<line x1=\"{:.0f}\" x2=\"{:.0f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ccc\"/>\n",
                       kLeft, kWidth - kRight, y0 + kPanelHeight, y0 + kPanelHeight);
    // Min and max of each bucket, in time order.
    const std::size_t buckets = std::min(n, kMaxPoints / 2);
    std::string points;
    for (std::size_t b = 0; b < buckets; ++b) {
      const std::size_t a = b * n / buckets;
      const std::size_t e = std::max(a + 1, (b + 1) * n / buckets);
      std::size_t imin = a, imax = a;
      bool any = false;
      for (std::size_t i = a; i < e && i < n; ++i) {
        if (!std::isfinite(values[i])) continue;
        if (!any || values[i] < values[imin]) imin = i;
        if (!any || values[i] > values[imax]) imax = i;
        any = true;
      }
      if (!any) continue;
      for (std::size_t i : {std::min(imin, imax), std::max(imin, imax)})
        points += fmt::format("{:.1f},{:.1f} ", x_of(trace.time_s[i]), y_of(values[i]));
    }
    svg += fmt::format("<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1\" points=\"{}\"/>\n", points);
  }
  const double bottom = kTop + kPanelHeight * static_cast<double>(panels.size());
  std::vector<double> bounds;
  for (const auto& e : seg.epochs) bounds.push_back(e.start_s);
  if (!seg.epochs.empty()) bounds.push_back(seg.epochs.back().end_s);
  for (double b : bounds)
    svg += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.0f}\" y2=\"{2:.0f}\" stroke=\"#d62728\" stroke-width=\"1.5\"/>\n",
                       x_of(b), kTop, bottom);
  // Time axis.
  const double step = std::pow(10.0, std::floor(std::log10(duration / 5)));
  const double tick = duration / step > 25 ? step * 5 : (duration / step > 10 ? step * 2 : step);
  for (double t = 0; t <= duration + 1e-9; t += tick)
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.0f}\" text-anchor=\"middle\" fill=\"#555\">{:g}</text>\n",
                       x_of(t), bottom + 14, t);
  svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"end\" fill=\"#555\">s from first sample; red: epoch boundaries</text>\n",
                     kWidth - kRight, bottom + 28);
  svg += "</svg>\n";
  return svg;
}

}  // namespace epochcast
