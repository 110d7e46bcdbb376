#include "epochcast/service/render.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace epochcast {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

InstanceCost cost(std::string provider, std::string instance, int gpus, double usd_h, double epoch_s, int epochs) {
  InstanceCost c;
  c.provider = std::move(provider);
  c.instance = std::move(instance);
  c.region = "us-east-1";
  c.gpu_count = gpus;
  c.gpu_share_usd_h = usd_h / gpus;
  c.usd_per_epoch = c.gpu_share_usd_h * epoch_s / 3600;
  c.usd_total = c.usd_per_epoch * epochs;
  c.as_of = "2024-06-01";
  return c;
}

PredictReport sample_report() {
  PredictReport r;
  r.epochs = 10;
  r.model = "default (bundled dataset)";
  r.source.gpu = "H200";
  r.source.gpu_name = "NVIDIA H200";
  r.source.gpu_name_in_trace = "NVIDIA H200";
  r.source.trace = "runs/<job>&1.csv";
  r.source.measured_epoch_s = 4.0;
  r.source.detected.found = true;
  r.source.detected.period_s = 4.0;
  r.source.detected.confidence = 0.9;
  r.source.detected.epochs = {{10, 14}, {14, 18}, {18, 22}};
  r.source.detected.channels = {"gpu_util_pct", "power_w"};
  r.source.detected.first_timestamp = "2026/11/30 15:22:53.672";
  r.source.detected.interval_s = 0.1;
  GpuPrediction h200{"H200", "NVIDIA H200", 4.0, 4.0, 4.0, true, false, {}};
  GpuPrediction t4{"T4", "Tesla T4", 40.0, 30.0, 55.0, false, true, {}};
  t4.instances = {cost("aws", "g4dn.xlarge", 1, 0.526, 40, 10), cost("gcp", "n1-standard-8+1xT4", 1, 0.73, 40, 10)};
  GpuPrediction a100{"A100-40GB", "NVIDIA A100 40GB", 8.0, 6.0, 11.0, false, false, {}};
  a100.instances = {cost("aws", "p4d.24xlarge", 8, 32.7726, 8, 10)};
  r.predictions = {t4, h200, a100};
  rank_by_time(r.predictions);
  r.warnings = {"source GPU H200 is not a source in the training data; intervals widened"};
  r.uncertainty = {{"unseen source GPU", std::log(1.3)}};
  r.validation.available = true;
  ProtocolScores lomo;
  lomo.protocol = "lomo";
  lomo.pairs = 1516;
  lomo.mape_pct = 5.9;
  lomo.median_ape_pct = 3.8;
  lomo.p90_ape_pct = 12.5;
  lomo.interval_coverage_pct = 89.0;
  lomo.per_target_gpu_mape_pct = {{"T4", 6.1}, {"V100", 5.2}};
  r.validation.protocols = {lomo};
  return r;
}

Trace sample_trace(std::size_t n, double interval_s) {
  Trace t;
  t.source = "sample";
  t.format = "nvidia-smi";
  for (std::size_t i = 0; i < n; ++i) t.time_s.push_back(i * interval_s);
  t.channel(Metric::kGpuUtil);
  t.channel(Metric::kPower);  // may reallocate: look both up afterwards
  auto& util = *t.find(Metric::kGpuUtil);
  auto& power = *t.find(Metric::kPower);
  for (std::size_t i = 0; i < n; ++i) {
    util.values[i] = 50 + 45 * std::sin(i * 0.3);
    power.values[i] = i % 97 == 0 ? std::numeric_limits<double>::quiet_NaN() : 300 + i % 7;
  }
  return t;
}

TEST(Rank, ByTimeFastestFirstAndByCostCheapestFirst) {
  const PredictReport r = sample_report();
  ASSERT_EQ(r.predictions.size(), 3u);
  EXPECT_EQ(r.predictions[0].gpu, "H200");
  EXPECT_EQ(r.predictions[1].gpu, "A100-40GB");
  EXPECT_EQ(r.predictions[2].gpu, "T4");
  const auto by_cost = rank_by_cost(r);
  ASSERT_EQ(by_cost.size(), 3u);  // the H200 has no price
  // T4 on g4dn 0.526 $/h * 40 s = 0.0058 $; T4 on GCP 0.73 $/h * 40 s = 0.0081 $;
  // one A100 of a p4d 32.77/8 $/h * 8 s = 0.0091 $.
  EXPECT_EQ(by_cost[0].instance->instance, "g4dn.xlarge");
  EXPECT_EQ(by_cost[1].instance->instance, "n1-standard-8+1xT4");
  EXPECT_EQ(by_cost[2].instance->instance, "p4d.24xlarge");
  for (std::size_t i = 1; i < by_cost.size(); ++i)
    EXPECT_LE(by_cost[i - 1].instance->usd_per_epoch, by_cost[i].instance->usd_per_epoch);
}

TEST(Json, DetectObjectFollowsTheDesignContract) {
  const nlohmann::json j = to_json(sample_report().source.detected);
  for (const char* key : {"found", "period_s", "confidence", "epochs", "first_timestamp", "interval_s", "channels", "reason"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["epochs"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["epochs"][1]["start_s"].get<double>(), 14.0);
  Segmentation none;
  none.reason = "no periodic structure";
  EXPECT_TRUE(to_json(none)["period_s"].is_null());
}

TEST(Json, PredictObjectFollowsTheIssueContract) {
  const nlohmann::json j = to_json(sample_report());
  EXPECT_EQ(j["source"]["gpu"], "H200");
  EXPECT_EQ(j["source"]["trace"], "runs/<job>&1.csv");
  EXPECT_TRUE(j["source"]["detected"]["found"].get<bool>());
  ASSERT_EQ(j["predictions"].size(), 3u);
  for (const auto& p : j["predictions"]) {
    EXPECT_TRUE(p["gpu"].is_string());
    EXPECT_TRUE(p["epoch_s"].is_number());
    ASSERT_EQ(p["interval_s"].size(), 2u);
    EXPECT_LE(p["interval_s"][0].get<double>(), p["epoch_s"].get<double>());
    EXPECT_GE(p["interval_s"][1].get<double>(), p["epoch_s"].get<double>());
    EXPECT_TRUE(p["measured"].is_boolean());
    EXPECT_TRUE(p["in_training_data"].is_boolean());
    for (const auto& inst : p["instances"])
      for (const char* key : {"provider", "instance", "usd_per_epoch", "usd_total"}) EXPECT_TRUE(inst.contains(key));
  }
  EXPECT_TRUE(j["predictions"][0]["measured"].get<bool>());
  EXPECT_NEAR(j["predictions"][2]["instances"][0]["usd_total"].get<double>(), 0.526 * 40 / 3600 * 10, 1e-12);
  EXPECT_EQ(j["warnings"].size(), 1u);
  EXPECT_EQ(j["validation"]["protocols"][0]["protocol"], "lomo");
  EXPECT_DOUBLE_EQ(j["validation"]["protocols"][0]["interval_coverage_pct"].get<double>(), 89.0);
}

TEST(Json, NonFiniteNumbersBecomeNull) {
  PredictReport r = sample_report();
  r.predictions[1].epoch_s = std::numeric_limits<double>::quiet_NaN();
  const nlohmann::json j = to_json(r);
  EXPECT_TRUE(j["predictions"][1]["epoch_s"].is_null());
  EXPECT_NO_THROW((void)j.dump());
}

TEST(Table, RanksMarksMeasuredAndShowsCostsAndWarnings) {
  const std::string full = render_table(sample_report());
  EXPECT_THAT(full, HasSubstr("\nAnswer:   Fastest: H200"));  // the one-line answer (answer_test.cpp)
  const std::string t = full.substr(full.find("Model:"));
  const auto h200 = t.find("H200 ");
  const auto a100 = t.find("A100-40GB*");
  const auto t4 = t.find("T4 ");
  ASSERT_NE(h200, std::string::npos) << t;
  ASSERT_NE(a100, std::string::npos) << t;
  ASSERT_NE(t4, std::string::npos) << t;
  EXPECT_LT(h200, a100);
  EXPECT_LT(a100, t4);
  EXPECT_THAT(t, HasSubstr("measured"));
  EXPECT_THAT(t, HasSubstr("(no price)"));
  EXPECT_THAT(t, HasSubstr("aws p4d.24xlarge (1/8)"));
  EXPECT_THAT(t, HasSubstr("Warnings:"));
  EXPECT_THAT(t, HasSubstr("not in the model's training data"));
  EXPECT_THAT(t, HasSubstr("10.00x"));  // T4 40 s vs 4 s measured
}

// An interval of "1 min 14 s - 2 min 37 s" ran into the "vs src" column and shifted the row.
TEST(Table, LongIntervalsWidenTheColumnInsteadOfShiftingTheRow) {
  PredictReport r = sample_report();
  r.predictions[2].interval_lo_s = 74;  // T4, the slowest, ranked last
  r.predictions[2].interval_hi_s = 157;
  r.predictions[2].epoch_s = 108;
  const std::string t = render_table(r);
  const auto header = t.find("rank  gpu");
  ASSERT_NE(header, std::string::npos) << t;
  const std::size_t header_line = t.rfind('\n', header) + 1;
  const std::size_t vs_src_end = t.find("vs src", header) + 6 - header_line;
  const auto row = t.find("1 min 14 s - 2 min 37 s");
  ASSERT_NE(row, std::string::npos) << t;
  const std::size_t row_line = t.rfind('\n', row) + 1;
  const std::size_t rel = t.find("27.00x", row);  // 108 s vs 4 s measured
  ASSERT_NE(rel, std::string::npos) << t;
  EXPECT_EQ(rel + 6 - row_line, vs_src_end) << t;
  const std::size_t h200_rel = t.find("1.00x");
  EXPECT_EQ(h200_rel + 5 - (t.rfind('\n', h200_rel) + 1), vs_src_end) << t;
}

TEST(Table, LongGpuIdsWidenTheColumnInsteadOfShiftingTheRow) {
  PredictReport r = sample_report();
  r.predictions[2].gpu = "a100-80gb-pcie";  // 14 characters + the unseen mark
  r.predictions[2].in_training_data = false;
  const std::string t = render_table(r);
  const auto header = t.find("rank  gpu");
  ASSERT_NE(header, std::string::npos) << t;
  const std::size_t header_line = t.rfind('\n', header) + 1;
  const std::size_t epoch_end = t.find("epoch", header) + 5 - header_line;
  // Every ranked row's epoch column ends where the header's does.
  for (const char* gpu : {"a100-80gb-pcie*", "H200 ", "A100-40GB*"}) {
    const auto at = t.find(gpu, header);
    ASSERT_NE(at, std::string::npos) << t;
    const std::size_t line = t.rfind('\n', at) + 1;
    const std::size_t s_end = t.find(" s ", at) + 2 - line;  // "NN.N s" ends the epoch cell
    EXPECT_EQ(s_end, epoch_end) << gpu << "\n" << t;
  }
}

TEST(Table, BatchHasOneLinePerTraceAndReportsErrors) {
  std::vector<BatchItem> batch(2);
  batch[0].trace = "a/vgg.smi.csv";
  batch[0].report = sample_report();
  batch[1].trace = "a/broken.csv";
  batch[1].error = "a/broken.csv:3:5: field 'power.draw [W]': not a number";
  batch[1].error_code = "parse";
  const std::string t = render_batch_table(batch);
  EXPECT_THAT(t, HasSubstr("vgg.smi.csv"));
  EXPECT_THAT(t, HasSubstr("T4 g4dn.xlarge"));
  EXPECT_THAT(t, HasSubstr("error: a/broken.csv:3:5"));
  const nlohmann::json j = to_json(batch);
  ASSERT_EQ(j["traces"].size(), 2u);
  EXPECT_EQ(j["traces"][1]["error"]["code"], "parse");
  EXPECT_EQ(j["summary"][0]["fastest_gpu"], "H200");
  EXPECT_EQ(j["summary"][0]["cheapest_gpu"], "T4");
}

TEST(Html, HasEveryPartEscapedAndNoNetwork) {
  const PredictReport r = sample_report();
  const std::string h = render_html(r, sample_trace(300, 0.1));
  EXPECT_THAT(h, HasSubstr("id=\"trace-chart\""));
  EXPECT_THAT(h, HasSubstr("id=\"prediction-chart\""));
  EXPECT_THAT(h, HasSubstr("id=\"cost-table\""));
  EXPECT_THAT(h, HasSubstr("id=\"validation\""));
  EXPECT_THAT(h, HasSubstr("id=\"warnings\""));
  // Three epochs: three start lines and one end line.
  std::size_t markers = 0;
  for (std::size_t p = h.find("class=\"epoch-marker\""); p != std::string::npos; p = h.find("class=\"epoch-marker\"", p + 1))
    ++markers;
  EXPECT_EQ(markers, 4u);
  std::size_t bars = 0;
  for (std::size_t p = h.find("<rect class=\"bar"); p != std::string::npos; p = h.find("<rect class=\"bar", p + 1)) ++bars;
  EXPECT_EQ(bars, 3u);
  EXPECT_THAT(h, HasSubstr("runs/&lt;job&gt;&amp;1.csv"));
  EXPECT_THAT(h, Not(HasSubstr("<job>")));
  EXPECT_THAT(h, Not(HasSubstr("http://")));   // the SVG namespace is https-free too
  EXPECT_THAT(h, Not(HasSubstr("https://")));
  EXPECT_THAT(h, Not(HasSubstr("<script src")));
}

std::string channel_path_of(const std::string& html, const std::string& tag) {
  const auto g = html.find("data-channel=\"" + tag + "\"");
  if (g == std::string::npos) return {};
  const auto d = html.find("<path d=\"", g);
  const auto end = html.find('"', d + 9);
  return html.substr(d + 9, end - d - 9);
}

TEST(Html, SparseTraceDrawsOneLineAndLongGapsLiftThePen) {
  Trace t = sample_trace(300, 0.1);  // fewer samples than columns
  const std::string dense = channel_path_of(render_html(sample_report(), t), "gpu_util_pct");
  ASSERT_FALSE(dense.empty());
  EXPECT_EQ(std::count(dense.begin(), dense.end(), 'M'), 1) << dense.substr(0, 200);
  // A single missing power sample is not a gap...
  const std::string power = channel_path_of(render_html(sample_report(), t), "power_w");
  EXPECT_EQ(std::count(power.begin(), power.end(), 'M'), 1);
  // ...five seconds of missing utilization are.
  for (std::size_t i = 100; i < 150; ++i) t.find(Metric::kGpuUtil)->values[i] = std::numeric_limits<double>::quiet_NaN();
  const std::string gapped = channel_path_of(render_html(sample_report(), t), "gpu_util_pct");
  EXPECT_EQ(std::count(gapped.begin(), gapped.end(), 'M'), 2);
}

TEST(Html, LongTraceIsDecimatedToAFewHundredKilobytes) {
  const PredictReport r = sample_report();
  const std::string h = render_html(r, sample_trace(864'000, 0.1));  // 24 h at 10 Hz
  EXPECT_LT(h.size(), 400'000u);
  EXPECT_GT(h.size(), 10'000u);
}

TEST(Format, DurationsReadForPeople) {
  EXPECT_EQ(format_duration(0), "0 s");
  EXPECT_EQ(format_duration(0.05), "50.0 ms");
  EXPECT_EQ(format_duration(4.234), "4.23 s");
  EXPECT_EQ(format_duration(42.0), "42.0 s");
  EXPECT_EQ(format_duration(723), "12 min 03 s");
  EXPECT_EQ(format_duration(7500), "2 h 05 min");
  EXPECT_EQ(format_duration(std::nan("")), "-");
}

}  // namespace
}  // namespace epochcast

namespace epochcast {
namespace {

// Without figures (a model fitted on other data), the text's Model line and the HTML page say
// why and how to get them (the text said only "no validation figures" until 2026-12-01).
TEST(Table, MissingValidationFiguresSayWhy) {
  PredictReport r = sample_report();
  r.model = "altered.json";
  r.validation = {};
  r.validation.note = "Held-out figures unknown for this model's data: measure them with `epochcast eval --data "
                      "DATASET` <here>.";
  const std::string t = render_table(r);
  EXPECT_THAT(t, HasSubstr("Model:    altered.json; held-out figures unknown for this model's data: measure them "
                           "with `epochcast eval --data DATASET` <here>."));
  const std::string h = render_html(r, sample_trace(300, 0.1));
  EXPECT_THAT(h, HasSubstr("No validation figures are available for this model.</p><p class=\"muted\">Held-out "
                           "figures unknown for this model&#39;s data: measure them with `epochcast eval --data "
                           "DATASET` &lt;here&gt;."));
}

}  // namespace
}  // namespace epochcast
