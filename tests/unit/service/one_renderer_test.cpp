// The HTML report and `detect --plot` draw with the one chart renderer (chart/svg_chart.hpp):
// the same classes, lanes and markers; a report without predictions says why instead of an
// empty chart; the batch page holds every trace.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <set>

#include "epochcast/epoch/plot.hpp"
#include "epochcast/service/render.hpp"

namespace epochcast {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::size_t count(const std::string& s, const std::string& needle) {
  std::size_t n = 0;
  for (auto p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

Trace trace() {
  Trace t;
  t.source = "job.csv";
  t.format = "canonical";
  for (int i = 0; i < 400; ++i) t.time_s.push_back(i * 0.1);
  t.channel(Metric::kGpuUtil);
  t.channel(Metric::kPower);
  for (int i = 0; i < 400; ++i) {
    t.find(Metric::kGpuUtil)->values[i] = std::fmod(i * 0.1, 5) < 4.5 ? 97 : 20;
    t.find(Metric::kPower)->values[i] = std::fmod(i * 0.1, 5) < 4.5 ? 600 : 200;
  }
  return t;
}

PredictReport report() {
  PredictReport r;
  r.source.gpu = "h200";
  r.source.trace = "job.csv";
  r.source.measured_epoch_s = 5;
  r.source.epoch_time_from = "detected";
  r.source.detected.found = true;
  r.source.detected.period_s = 5;
  r.source.detected.confidence = 0.9;
  r.source.detected.channels = {"gpu_util_pct"};
  r.source.detected.epochs = {{5, 10}, {10, 15}, {15, 20}, {20, 25}};
  GpuPrediction h200{"h200", "NVIDIA H200", 5, 5, 5, true, true, {}};
  GpuPrediction t4{"t4", "Tesla T4", 40, 30, 50, false, true, {}};
  InstanceCost c;
  c.provider = "aws", c.instance = "g4dn.xlarge", c.usd_per_epoch = 0.006;
  t4.instances = {c};
  r.predictions = {h200, t4};
  return r;
}

// The channels drawn and the classes used, in order of appearance.
std::vector<std::string> lane_names(const std::string& svg) {
  std::vector<std::string> out;
  static const std::regex lane(R"re(class="lane channel" data-channel="([^"]+)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), lane); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}
std::set<std::string> classes(const std::string& svg) {
  std::set<std::string> out;
  static const std::regex cls(R"re(class="([^"]+)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), cls); it != std::sregex_iterator(); ++it)
    out.insert((*it)[1]);
  return out;
}

TEST(OneRenderer, ReportTraceChartIsTheDetectPlot) {
  const Trace t = trace();
  const PredictReport r = report();
  const std::string plot = render_detection_svg(t, r.source.detected);  // what detect --plot writes
  const std::string html = render_html(r, t);
  const auto at = html.find("<svg class=\"ec-chart ec-lanes\" viewBox");
  ASSERT_NE(at, std::string::npos) << "the report's trace chart is not the chart renderer's";
  const std::string inline_svg = html.substr(at, html.find("</svg>", at) + 6 - at);
  EXPECT_THAT(inline_svg, HasSubstr("id=\"trace-chart\""));
  EXPECT_EQ(lane_names(inline_svg), lane_names(plot));
  EXPECT_EQ(lane_names(plot), (std::vector<std::string>{"gpu_util_pct", "power_w"}));
  EXPECT_EQ(classes(inline_svg), classes(plot));
  EXPECT_EQ(count(plot, "class=\"epoch-marker"), 5u);
  EXPECT_EQ(count(inline_svg, "class=\"epoch-marker"), 5u);
  for (const std::string* svg : {&plot, &inline_svg}) {
    EXPECT_THAT(*svg, HasSubstr("class=\"axis x-axis\""));
    EXPECT_THAT(*svg, HasSubstr("time from the first sample"));
    EXPECT_THAT(*svg, HasSubstr(">gpu_util_pct</text>"));
  }
  // The bars come from the same renderer.
  EXPECT_THAT(html, HasSubstr("<svg class=\"ec-chart ec-bars\" viewBox"));
  EXPECT_THAT(html, HasSubstr("id=\"prediction-chart\""));
}

TEST(OneRenderer, NoPredictionSaysWhyInsteadOfAnEmptyChart) {
  PredictReport r = report();
  r.predictions.clear();
  r.source.detected.found = false;
  r.source.detected.epochs.clear();
  r.warnings = {"no epochs detected (confidence 0.31 below 0.50); nothing to predict from: give the source's epoch "
                "time if it is known"};
  const std::string html = render_html(r, trace());
  EXPECT_THAT(html, HasSubstr("id=\"no-prediction\""));
  EXPECT_THAT(html, HasSubstr("No prediction: no epochs detected (confidence 0.31 below 0.50)"));
  EXPECT_THAT(html, Not(HasSubstr("id=\"prediction-chart\"")));
  EXPECT_THAT(html, Not(HasSubstr("id=\"cost-table\"")));
  EXPECT_THAT(html, HasSubstr("id=\"trace-chart\""));  // the trace is still shown: it shows why
}

TEST(OneRenderer, CellsDoNotWrap) {
  const std::string html = render_html(report(), trace());
  EXPECT_THAT(html, HasSubstr("td,th{"));
  EXPECT_THAT(html.substr(html.find("td,th{"), 200), HasSubstr("white-space:nowrap"));
}

TEST(OneRenderer, BatchPageHasEveryTraceAnswersFirst) {
  std::vector<BatchItem> batch(3);
  batch[0].trace = "d/a<1>.csv";
  batch[0].report = report();
  batch[1].trace = "d/b.csv";
  batch[1].report = report();
  batch[1].report->predictions.clear();
  batch[1].report->warnings = {"no epochs detected (flat trace); nothing to predict from"};
  batch[2].trace = "d/c.csv";
  batch[2].error = "d/c.csv:3:5: field 'power.draw [W]': not a number";
  batch[2].error_code = "parse";
  const std::string html = render_batch_html(batch);
  const auto answers = html.find("id=\"answers\"");
  ASSERT_NE(answers, std::string::npos);
  EXPECT_LT(answers, html.find("id=\"trace-1\""));
  EXPECT_EQ(count(html, "<section class=\"trace\""), 3u);
  EXPECT_THAT(html, HasSubstr("a&lt;1&gt;.csv"));
  EXPECT_THAT(html, Not(HasSubstr("a<1>")));
  EXPECT_THAT(html, HasSubstr("Fastest: h200 at 5.00 s per epoch"));
  EXPECT_THAT(html, HasSubstr("No prediction: no epochs detected (flat trace)"));
  EXPECT_THAT(html, HasSubstr("error: d/c.csv:3:5: field &#39;power.draw [W]&#39;: not a number"));
  EXPECT_EQ(count(html, "<svg class=\"ec-chart ec-bars\""), 1u);  // only the trace with predictions
}

}  // namespace
}  // namespace epochcast
