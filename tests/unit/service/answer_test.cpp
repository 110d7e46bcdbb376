// The one-line answer: fastest, cheapest, and the caveat chosen by the rule of answer.hpp, the
// same in the table, the JSON and the HTML.
#include "epochcast/service/answer.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "epochcast/service/render.hpp"

namespace epochcast {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

InstanceCost priced(const std::string& instance, double usd_per_epoch) {
  InstanceCost c;
  c.provider = "aws";
  c.instance = instance;
  c.usd_per_epoch = usd_per_epoch;
  return c;
}

// Found with confidence 0.95, epoch time detected, precision given: no caveat of rules 1 and 4.
PredictReport report() {
  PredictReport r;
  r.precision = "bf16";
  r.source.gpu = "h200";
  r.source.epoch_time_from = "detected";
  r.source.measured_epoch_s = 5;
  r.source.detected.found = true;
  r.source.detected.confidence = 0.95;
  GpuPrediction h200{"h200", "NVIDIA H200", 5, 5, 5, true, true, {}};
  GpuPrediction b200{"b200", "NVIDIA B200", 3, 2.5, 3.6, false, true, {}};
  b200.instances = {priced("p6.48xlarge", 0.05)};
  GpuPrediction t4{"t4", "Tesla T4", 40, 30, 50, false, true, {}};
  t4.instances = {priced("g4dn.xlarge", 0.006)};
  r.predictions = {h200, b200, t4};
  rank_by_time(r.predictions);
  return r;
}

TEST(Answer, NamesTheFastestAndTheCheapest) {
  const PredictReport r = report();
  const Answer a = answer_of(r);
  ASSERT_TRUE(a.fastest && a.cheapest);
  EXPECT_EQ(a.fastest->gpu, "b200");
  EXPECT_EQ(a.cheapest_gpu->gpu, "t4");
  EXPECT_EQ(a.caveat, "");
  EXPECT_EQ(a.text, "Fastest: b200 at 3.00 s per epoch; cheapest: t4 on aws g4dn.xlarge at $0.00600 per epoch.");
}

TEST(Answer, CaveatsComeInTheRulesOrder) {
  PredictReport r = report();
  r.precision = "auto";  // rule 4 applies...
  EXPECT_THAT(answer_of(r).caveat, HasSubstr("precision was not given"));
  r.uncertainty = {{"channels missing", std::log(1.1)}, {"features outside the training range", std::log(1.4)}};
  EXPECT_EQ(answer_of(r).caveat, "features outside the training range (intervals widened ×1.40)");  // ...3 wins: the widest
  r.predictions[2].in_training_data = false;  // the cheapest (t4) extrapolated: rule 2
  EXPECT_THAT(answer_of(r).caveat, StartsWith("t4 is not in the model's training data"));
  r.source.detected.confidence = 0.6;  // rule 1
  const Answer a = answer_of(r);
  EXPECT_THAT(a.caveat, HasSubstr("confidence 0.60 only"));
  EXPECT_THAT(a.text, HasSubstr(". Caveat: the epoch period was detected with confidence 0.60"));
  r.source.epoch_time_from = "given";  // a given epoch time does not rest on the detection
  EXPECT_THAT(answer_of(r).caveat, StartsWith("t4 is not"));
}

TEST(Answer, NoPredictionSaysWhy) {
  PredictReport r = report();
  r.predictions.clear();
  r.source.detected.found = false;
  r.source.detected.reason = "no periodic structure";
  r.warnings = {"trace: 3 rows skipped",
                "no epochs detected (no periodic structure); nothing to predict from: give the source's epoch time if "
                "it is known"};
  const Answer a = answer_of(r);
  EXPECT_FALSE(a.fastest);
  EXPECT_EQ(a.no_prediction, r.warnings[1]);
  EXPECT_EQ(a.text, "No prediction: " + r.warnings[1] + ".");
  r.warnings.clear();  // without predict's sentence: the detection's own reason
  EXPECT_EQ(answer_of(r).no_prediction, "no epochs detected (no periodic structure)");
}

TEST(Answer, TableJsonAndHtmlCarryTheSameLine) {
  PredictReport r = report();
  r.precision = "auto";
  const std::string line = answer_of(r).text;
  const std::string table = render_table(r);
  // Right under the Trace/Source/Detected lines, before the tables and the warnings.
  const auto at = table.find("\nAnswer:   " + line + "\n");
  ASSERT_NE(at, std::string::npos) << table;
  EXPECT_LT(table.find("Detected: "), at);
  EXPECT_GT(table.find("Epoch time on each GPU"), at);
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["answer"]["text"], line);
  EXPECT_EQ(j["answer"]["fastest_gpu"], "b200");
  EXPECT_EQ(j["answer"]["cheapest_instance"], "aws g4dn.xlarge");
  EXPECT_TRUE(j["answer"]["no_prediction"].is_null());
  Trace t;
  t.source = "x.csv";
  for (int i = 0; i < 10; ++i) t.time_s.push_back(i);
  t.channel(Metric::kGpuUtil).values = {0, 9, 0, 9, 0, 9, 0, 9, 0, 9};
  const std::string html = render_html(r, t);
  // The first thing after the heading. The HTML escapes nothing in this line but the apostrophe.
  std::string escaped = line;
  for (std::size_t p = escaped.find('\''); p != std::string::npos; p = escaped.find('\'', p + 5))
    escaped.replace(p, 1, "&#39;");
  EXPECT_THAT(html, HasSubstr("</h1><p id=\"answer\" class=\"answer\">" + escaped + "</p>"));
}

}  // namespace
}  // namespace epochcast
