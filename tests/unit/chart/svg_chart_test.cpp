// The one SVG chart renderer: lanes with epochs, bars with intervals; axes and labels present,
// every string escaped, a standalone file vs an inline element.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "epochcast/chart/svg_chart.hpp"

namespace epochcast::chart {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::size_t count(const std::string& s, const std::string& needle) {
  std::size_t n = 0;
  for (auto p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

struct Series {
  std::vector<double> time_s, util, power;
};

Series series(int n, double dt) {
  Series s;
  for (int i = 0; i < n; ++i) {
    s.time_s.push_back(i * dt);
    s.util.push_back(std::fmod(i * dt, 5.0) < 4 ? 95 : 10);
    s.power.push_back(100 + i % 7);
  }
  return s;
}

LaneChart lanes_of(const Series& s) {
  LaneChart c;
  c.frame = {"t<1>", "a & b", false};
  c.title = "run<1>&\"x\".csv";
  c.time_s = &s.time_s;
  c.duration_s = s.time_s.back();
  c.interval_s = s.time_s[1] - s.time_s[0];
  c.lanes.push_back({"gpu_util_pct", "%", &s.util, 0, 100});
  c.lanes.push_back({"power_w", "W", &s.power, 100, 106});
  c.epochs = {{5, 10}, {10, 15}, {15, 20}};
  c.region = {4, 21};
  c.caption = "shaded: epochs";
  return c;
}

TEST(LaneChart, HasLanesAxesLabelsAndOneMarkerPerBoundary) {
  const Series s = series(300, 0.1);
  const std::string svg = render(lanes_of(s));
  EXPECT_EQ(svg.rfind("<svg class=\"ec-chart ec-lanes\"", 0), 0u) << svg.substr(0, 200);
  EXPECT_EQ(count(svg, "class=\"lane channel\""), 2u);
  EXPECT_THAT(svg, HasSubstr(">gpu_util_pct</text>"));
  EXPECT_THAT(svg, HasSubstr("0 to 100 %"));
  EXPECT_THAT(svg, HasSubstr("class=\"axis x-axis\""));
  EXPECT_THAT(svg, HasSubstr("class=\"axis-label\""));
  EXPECT_THAT(svg, HasSubstr(">0 s</text>"));
  EXPECT_THAT(svg, HasSubstr(">25 s</text>"));  // 29.9 s in steps of 5 s
  EXPECT_EQ(count(svg, "class=\"epoch-span\""), 3u);
  EXPECT_EQ(count(svg, "class=\"epoch-marker"), 4u);  // three starts and the last end
  EXPECT_EQ(count(svg, "class=\"epoch-marker\" data-boundary=\"last-end\""), 1u);
  EXPECT_EQ(count(svg, "class=\"region\""), 1u);
  EXPECT_THAT(svg, HasSubstr("shaded: epochs"));
  // Inline: no namespace URL, no background; strings escaped.
  EXPECT_THAT(svg, Not(HasSubstr("xmlns")));
  EXPECT_THAT(svg, HasSubstr("id=\"t&lt;1&gt;\""));
  EXPECT_THAT(svg, HasSubstr("aria-label=\"a &amp; b\""));
  EXPECT_THAT(svg, HasSubstr("run&lt;1&gt;&amp;&quot;x&quot;.csv"));
  EXPECT_THAT(svg, Not(HasSubstr("run<1>")));
}

TEST(LaneChart, StandaloneFileHasNamespaceAndBackground) {
  const Series s = series(50, 1);
  LaneChart c = lanes_of(s);
  c.frame.standalone = true;
  const std::string svg = render(c);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_THAT(svg, HasSubstr("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>"));
  EXPECT_EQ(svg.back(), '\n');
}

TEST(LaneChart, LongGapsLiftThePenAndShortOnesDoNot) {
  Series s = series(3000, 0.1);
  const auto path_of = [](const std::string& svg, const std::string& tag) {
    const auto g = svg.find("data-channel=\"" + tag + "\"");
    const auto d = svg.find("<path d=\"", g);
    return svg.substr(d + 9, svg.find('"', d + 9) - d - 9);
  };
  s.power[100] = std::numeric_limits<double>::quiet_NaN();  // one sample missing: not a gap
  for (int i = 1000; i < 1100; ++i) s.util[i] = std::numeric_limits<double>::quiet_NaN();  // 10 s: a gap
  const std::string svg = render(lanes_of(s));
  const std::string util = path_of(svg, "gpu_util_pct"), power = path_of(svg, "power_w");
  EXPECT_EQ(std::count(util.begin(), util.end(), 'M'), 2);
  EXPECT_EQ(std::count(power.begin(), power.end(), 'M'), 1);
}

TEST(LaneChart, MinutesOnTheAxisOfALongTrace) {
  Series s = series(2000, 1);  // 33 min
  const std::string svg = render(lanes_of(s));
  EXPECT_THAT(svg, HasSubstr(">5 min</text>"));
  EXPECT_THAT(svg, HasSubstr(">30 min</text>"));
}

TEST(BarChart, BarsWhiskersAxisAndLabels) {
  BarChart c;
  c.frame = {"prediction-chart", "epoch time", false};
  c.format = [](double v) { return std::to_string(static_cast<int>(v)) + " s"; };
  c.axis_label = "epoch time";
  c.bars.push_back({"h200", "NVIDIA <H200>", 5, 0, 0, Bar::Kind::kMeasured, " (measured)"});
  c.bars.push_back({"t4", "Tesla T4", 40, 30, 60, Bar::Kind::kSeen, ""});
  c.bars.push_back({"l4", "L4", 20, 15, 25, Bar::Kind::kUnseen, ""});
  const std::string svg = render(c);
  EXPECT_EQ(svg.rfind("<svg class=\"ec-chart ec-bars\"", 0), 0u);
  EXPECT_EQ(count(svg, "<rect class=\"bar"), 3u);
  EXPECT_EQ(count(svg, "<rect class=\"bar measured\""), 1u);
  EXPECT_EQ(count(svg, "class=\"interval\""), 2u);  // the measured bar has none
  EXPECT_THAT(svg, HasSubstr(std::string("fill=\"") + kBarUnseen + "\""));
  EXPECT_THAT(svg, HasSubstr("NVIDIA &lt;H200&gt;"));
  EXPECT_THAT(svg, HasSubstr(">5 s (measured)</text>"));
  EXPECT_THAT(svg, HasSubstr("class=\"axis x-axis\""));
  EXPECT_THAT(svg, HasSubstr(">60 s</text>"));  // the axis reaches the widest whisker
  EXPECT_THAT(svg, HasSubstr(">epoch time</text>"));
}

}  // namespace
}  // namespace epochcast::chart
