// The SVG picture and the published-detector baseline.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "epochcast/epoch/detect.hpp"
#include "epochcast/epoch/plot.hpp"
#include "eval/published.hpp"
#include "eval/synthetic.hpp"

namespace epochcast {
namespace {

std::size_t count(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = hay.find(needle); pos != std::string::npos; pos = hay.find(needle, pos + 1)) ++n;
  return n;
}

TEST(Plot, MarksEveryBoundaryAndEscapesNames) {
  SyntheticSpec spec;
  spec.epochs = 6;
  auto s = make_synthetic_trace(spec, 31);
  s.trace.source = "run<1>&\"x\".csv";
  const auto seg = detect_epochs(s.trace);
  ASSERT_TRUE(seg.found) << seg.reason;
  const std::string svg = render_detection_svg(s.trace, seg);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"epoch-marker"), seg.epochs.size() + 1);  // each start and the last end
  EXPECT_NE(svg.find("class=\"ec-chart ec-lanes\""), std::string::npos);  // the one chart renderer
  EXPECT_EQ(svg.find("run<1>"), std::string::npos);
  EXPECT_NE(svg.find("run&lt;1&gt;&amp;&quot;x&quot;.csv"), std::string::npos);
  // The voting channels are drawn; the constant SM clock of the generator is not.
  EXPECT_NE(svg.find(">gpu_util_pct<"), std::string::npos);
}

TEST(Plot, NotFoundStillDraws) {
  Trace t;
  for (int i = 0; i < 30; ++i) t.time_s.push_back(i * 0.1);
  t.channel(Metric::kPower).values.assign(30, 100.0);
  t.find(Metric::kPower)->values[3] = 120;
  const auto seg = detect_epochs(t);
  ASSERT_FALSE(seg.found);
  const std::string svg = render_detection_svg(t, seg);
  EXPECT_NE(svg.find("no period found"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"epoch-marker"), 0u);
}

TEST(Published, FindsTheBaseCaseRoughly) {
  SyntheticSpec spec;
  spec.epochs = 8;
  spec.event_depth = 0.8;
  const auto s = make_synthetic_trace(spec, 32);
  const auto seg = detect_epochs_published(s.trace);
  ASSERT_TRUE(seg.found) << seg.reason;
  EXPECT_NEAR(seg.period_s, s.truth.period_s, 0.15 * s.truth.period_s);
  EXPECT_EQ(seg.channels, std::vector<std::string>{"gpu_util_pct"});
}

TEST(Published, NeedsUtilization) {
  SyntheticSpec spec;
  auto s = make_synthetic_trace(spec, 33);
  std::erase_if(s.trace.channels, [](const Channel& c) { return c.metric == Metric::kGpuUtil; });
  const auto seg = detect_epochs_published(s.trace);
  EXPECT_FALSE(seg.found);
  EXPECT_EQ(seg.reason, "no utilization.gpu channel");
}

}  // namespace
}  // namespace epochcast
