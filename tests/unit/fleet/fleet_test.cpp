// src/fleet without a server: shards, credentials, the row alignment, the job split rules,
// the JSON and the metrics text.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "epochcast/fleet/watch.hpp"
#include "gpu_samples.hpp"
#include "job_key.hpp"
#include "job_split.hpp"

using namespace epochcast;
using namespace epochcast::fleet;

namespace {

TEST(Shard, ParsesAndRefuses) {
  const Shard s = parse_shard("2/3");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 3);
  for (const char* bad : {"0/2", "3/2", "1/0", "a/b", "1/", "/2", "1-2", "", "1/5000"})
    EXPECT_THROW(static_cast<void>(parse_shard(bad)), FieldError) << bad;
}

TEST(Shard, HashIsFnv1aAndShardsPartition) {
  EXPECT_EQ(stable_hash(""), 14695981039346656037ULL);
  EXPECT_EQ(stable_hash("a"), 0xaf63dc4c8601ec8cULL);  // FNV-1a 64 test vector
  std::size_t counts[4] = {};
  for (int i = 0; i < 4000; ++i) {
    const std::string uuid = "GPU-" + std::to_string(i);
    int owners = 0;
    for (int k = 1; k <= 4; ++k)
      if (in_shard(uuid, {k, 4})) {
        ++owners;
        ++counts[k - 1];
      }
    EXPECT_EQ(owners, 1) << uuid;
  }
  for (std::size_t c : counts) EXPECT_NEAR(static_cast<double>(c), 1000, 150);
}

TEST(Url, CredentialsAreStripped) {
  EXPECT_EQ(strip_credentials("http://u:p@host:9090/prom"), "http://host:9090/prom");
  EXPECT_EQ(strip_credentials("https://host:9090"), "https://host:9090");
  EXPECT_EQ(strip_credentials("http://host/a@b"), "http://host/a@b");
}

TEST(WatchRequest, FieldsAreChecked) {
  WatchRequest r;
  r.url = "http://x:1";
  EXPECT_NO_THROW(r.validate());
  auto field_of = [](WatchRequest w) {
    try {
      w.validate();
    } catch (const FieldError& e) {
      return e.field();
    }
    return std::string();
  };
  WatchRequest bad = r;
  bad.url = "x:1";
  EXPECT_EQ(field_of(bad), "url");
  bad = r;
  bad.every_s = 0;
  EXPECT_EQ(field_of(bad), "every_s");
  bad = r;
  bad.selector = "}";
  EXPECT_EQ(field_of(bad), "selector");
  EXPECT_THROW(static_cast<void>(parse_duration_s("soon", "every_s")), FieldError);
  EXPECT_DOUBLE_EQ(parse_duration_s("5m", "every_s"), 300);
}

PrometheusSeries series(const std::string& name, const std::string& uuid, Labels extra,
                        std::vector<std::pair<double, double>> points) {
  PrometheusSeries s;
  s.labels = {{"__name__", name}, {"UUID", uuid}, {"Hostname", "h"}, {"gpu", "0"}, {"modelName", "NVIDIA L4"}};
  for (auto& [k, v] : extra) s.labels[k] = v;
  s.points = std::move(points);
  return s;
}

TEST(GpuRows, SkewedSeriesShareTheUtilisationRows) {
  std::vector<PrometheusSeries> all = {
      series("DCGM_FI_DEV_GPU_UTIL", "G", {}, {{100, 90}, {115, 91}, {130, 92}}),
      // 4 s late (another exporter's clock): still on the same rows; one 9 s off is dropped.
      series("DCGM_FI_DEV_POWER_USAGE", "G", {}, {{104, 300}, {119, 301}, {139, 302}}),
      series("NOT_A_TABLE_METRIC", "G", {}, {{100, 1}}),
  };
  std::map<std::string, GpuRows> rows;
  std::size_t unmatched = 0;
  collect_rows(all, rows, unmatched);
  ASSERT_EQ(rows.size(), 1u);
  const GpuRows& r = rows.at("G");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r.values.at(Metric::kPower)[0], 300);
  EXPECT_EQ(r.values.at(Metric::kPower)[1], 301);
  EXPECT_TRUE(std::isnan(r.values.at(Metric::kPower)[2]));
  EXPECT_EQ(r.dropped, 1u);
  EXPECT_EQ(r.model_name, "NVIDIA L4");
}

TEST(GpuRows, ExportedPodLabelsNameTheJob) {
  const Labels l = job_labels({{"pod", "dcgm-exporter-x"}, {"exported_pod", "train"}, {"namespace", "gpu"},
                               {"exported_namespace", "ml"}, {"UUID", "G"}});
  EXPECT_EQ(l.at("pod"), "train");
  EXPECT_EQ(l.at("namespace"), "ml");
  EXPECT_FALSE(l.contains("UUID"));
}

TEST(GpuRows, JobKeyLabelsAreKeptWithTheJobsLabels) {
  const Labels l = job_labels({{"pod", "r50-x7k2p"}, {"job_name", "r50"}, {"exported_team", "vision"}, {"team", "infra"},
                               {"other", "dropped"}},
                              {"job_name", "team"});
  EXPECT_EQ(l.at("job_name"), "r50");
  EXPECT_EQ(l.at("team"), "vision") << "exported_* wins, as for pod";
  EXPECT_FALSE(l.contains("other"));
}

TEST(JobKey, TemplateMakesTheKeyOfTheJobsLabels) {
  const JobKeyTemplate t = parse_job_key_template("{namespace}/{job_name}-v{job_name}");
  EXPECT_EQ(t.labels, (std::vector<std::string>{"namespace", "job_name"}));
  EXPECT_EQ(render_job_key(t, {{"namespace", "ml"}, {"job_name", "r50"}}).key, "ml/r50-vr50");
  const JobKey missing = render_job_key(t, {{"namespace", "ml"}});
  EXPECT_EQ(missing.key, "");
  EXPECT_NE(missing.problem.find("'job_name'"), std::string::npos) << missing.problem;
  EXPECT_NE(render_job_key(t, {{"namespace", "ml"}, {"job_name", ""}}).problem, "") << "an empty label is no key";
  // Label values come from scraped series: too long or with control bytes, no key (and why).
  const JobKey huge = render_job_key(t, {{"namespace", std::string(300, 'n')}, {"job_name", "r"}});
  EXPECT_EQ(huge.key, "");
  EXPECT_NE(huge.problem.find("more than 256"), std::string::npos) << huge.problem;
  const JobKey ctl = render_job_key(t, {{"namespace", "ml\x1b[2J"}, {"job_name", "r"}});
  EXPECT_EQ(ctl.key, "");
  EXPECT_NE(ctl.problem.find("control"), std::string::npos);
  EXPECT_TRUE(parse_job_key_template("").empty());
}

// A pod's generated suffixes go, so every run of one workload has one key.
TEST(JobKey, WorkloadModifierDropsKubernetesGeneratedSuffixes) {
  EXPECT_EQ(kubernetes_workload("r50-x7k2p"), "r50");                    // a Job's pod
  EXPECT_EQ(kubernetes_workload("retrain-29012345-x7k2p"), "retrain");  // a CronJob's
  EXPECT_EQ(kubernetes_workload("bert-7d4b9c8f6d-q2w5z"), "bert");      // a Deployment's
  EXPECT_EQ(kubernetes_workload("sweep-3-x7k2p"), "sweep");             // an indexed Job's
  EXPECT_EQ(kubernetes_workload("trainer"), "trainer");                 // not generated: as it is
  EXPECT_EQ(kubernetes_workload("pytorchjob-worker-0"), "pytorchjob-worker-0");
  EXPECT_EQ(kubernetes_workload("train-abcde"), "train-abcde") << "vowels are never generated";
  EXPECT_EQ(kubernetes_workload("-x7k2p"), "-x7k2p") << "nothing would be left";
  const JobKeyTemplate t = parse_job_key_template("{namespace}/{pod|workload}");
  EXPECT_EQ(t.labels, (std::vector<std::string>{"namespace", "pod"}));
  EXPECT_EQ(render_job_key(t, {{"namespace", "ml"}, {"pod", "retrain-29012345-x7k2p"}}).key, "ml/retrain");
  EXPECT_EQ(render_job_key(t, {{"namespace", "ml"}, {"pod", "retrain-29013785-b2c4d"}}).key, "ml/retrain")
      << "the next night's run: the same key";
}

TEST(JobKey, BadTemplatesAreRefusedWithTheReason) {
  const auto why = [](std::string_view text) {
    try {
      static_cast<void>(parse_job_key_template(text));
    } catch (const FieldError& e) {
      EXPECT_EQ(e.field(), "job_key_template");
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(why("{pod").find("not closed"), std::string::npos);
  EXPECT_NE(why("pod}").find("without"), std::string::npos);
  EXPECT_NE(why("{pod-name}").find("not a label name"), std::string::npos);
  EXPECT_NE(why("{}").find("not a label name"), std::string::npos);
  EXPECT_NE(why("{pod|upper}").find("the only modifier is |workload"), std::string::npos);
  EXPECT_NE(why("{|workload}").find("not a label name"), std::string::npos);
  EXPECT_NE(why("nightly").find("names no label"), std::string::npos);
  // Prometheus' target labels and the GPU's own: one key for every job, or none shared by two GPUs.
  for (const char* l : {"{job}", "{instance}", "{UUID}", "{Hostname}", "{gpu}", "{modelName}"})
    EXPECT_NE(why(l).find("not the workload"), std::string::npos) << l;
  EXPECT_NE(why("{__name__}").find("reserved"), std::string::npos);
  EXPECT_NE(why("{target_gpu}").find("reserved"), std::string::npos);
  EXPECT_EQ(why("{namespace}/{pod}"), "accepted");
}

// Rows every 15 s from `from` s: utilisation `util` and the pod label `pod` ("" for none).
void add_rows(GpuRows& r, double from, int n, double util, const std::string& pod) {
  const Labels l = pod.empty() ? Labels{} : Labels{{"pod", pod}};
  auto it = std::find(r.label_sets.begin(), r.label_sets.end(), l);
  const auto set = static_cast<std::uint32_t>(it - r.label_sets.begin());
  if (it == r.label_sets.end()) r.label_sets.push_back(l);
  for (int i = 0; i < n; ++i) {
    r.ms.push_back(static_cast<std::int64_t>((from + 15.0 * i) * 1000));
    r.label_set.push_back(set);
    r.values[Metric::kGpuUtil].push_back(util);
  }
}

TEST(JobSplit, LabelChangeIdleGapAndSilence) {
  GpuRows r;
  r.model_name = "NVIDIA L4";
  add_rows(r, 0, 40, 95, "a");                   // job a
  add_rows(r, 600, 40, 95, "b");                 // pod b right after: a new job
  add_rows(r, 1200, 50, 0, "b");                 // 12.5 min idle: b ends
  add_rows(r, 1950, 20, std::numeric_limits<double>::quiet_NaN(), "b");  // unknown: no job starts
  add_rows(r, 2250, 20, 95, "b");                // busy again: a new job, same labels
  GpuTimeline t("G", "src");
  EXPECT_EQ(t.add(r), r.size());
  EXPECT_EQ(t.add(r), 0u) << "rows already taken are not taken again";
  ASSERT_EQ(t.jobs().size(), 3u);
  EXPECT_EQ(t.jobs()[0].view.labels.at("pod"), "a");
  EXPECT_EQ(t.jobs()[0].view.samples, 40u);
  EXPECT_TRUE(t.jobs()[1].ended);
  EXPECT_EQ(t.jobs()[1].view.samples, 40u) << "the idle tail is not the job's";
  EXPECT_DOUBLE_EQ(*t.jobs()[1].view.end_unix_s, 600 + 15 * 39);
  EXPECT_FALSE(t.jobs()[2].ended);
  EXPECT_TRUE(t.busy());
  // Nothing for kIdleGapS after its last row: the running job ends.
  t.close_if_silent(static_cast<std::int64_t>((2250 + 15 * 19 + kIdleGapS) * 1000));
  EXPECT_TRUE(t.jobs()[2].ended);
  EXPECT_FALSE(t.busy());
  t.forget_ended_before(static_cast<std::int64_t>(1300 * 1000));
  EXPECT_EQ(t.jobs().size(), 1u);
}

TEST(JobSplit, AJobKeepsAtMostItsNewestRows) {
  GpuRows r;
  add_rows(r, 0, static_cast<int>(kMaxJobRows + kMaxJobRows / 10 + 5), 95, "a");
  GpuTimeline t("G", "src");
  t.add(r);
  ASSERT_EQ(t.jobs().size(), 1u);
  const Trace& tr = t.jobs()[0].trace;
  EXPECT_LE(tr.size(), kMaxJobRows + kMaxJobRows / 10);
  EXPECT_EQ(tr.time_s.front(), 0);
  EXPECT_DOUBLE_EQ(tr.start_unix_s + tr.time_s.back(), 15.0 * static_cast<double>(r.size() - 1));
  EXPECT_DOUBLE_EQ(t.jobs()[0].view.start_unix_s, 0) << "the job's start stays its own";
}

TEST(FleetText, JsonAndMetricsCarryTheJob) {
  FleetSnapshot s;
  s.source = "http://p:9090";
  s.errors_total = 3;
  s.last_pass = PassStats{};
  GpuView g;
  g.uuid = "GPU-1";
  g.hostname = "n\"1";
  g.busy = true;
  JobView j;
  j.id = "GPU-1/x";
  j.analysed = j.found = true;
  j.epoch_s = 100;
  j.confidence = 0.8;
  j.labels = {{"pod", "p"}};
  j.predictions.push_back({"l4", 300, 250, 400, {{"aws", "g6.xlarge", 0.07}}});
  g.jobs.push_back(j);
  s.gpus.push_back(g);
  const auto doc = nlohmann::json::parse(fleet_json(s));
  EXPECT_EQ(doc["gpus"][0]["jobs"][0]["predictions"][0]["hi_s"], 400);
  EXPECT_EQ(doc["gpus"][0]["state"], "busy");
  EXPECT_TRUE(doc["gpus"][0]["jobs"][0]["end"].is_null());
  const std::string text = fleet_metrics_text(s);
  EXPECT_NE(text.find("epochcast_watch_errors_total 3"), std::string::npos) << text;
  EXPECT_NE(text.find("Hostname=\"n\\\"1\""), std::string::npos) << "label values are escaped: " << text;
  EXPECT_NE(text.find("bound=\"hi\"} 400"), std::string::npos) << text;
  EXPECT_NE(text.find("provider=\"aws\",instance=\"g6.xlarge\"} 0.07"), std::string::npos) << text;
  // An ended job is in the JSON, not in the gauges.
  s.gpus[0].busy = false;
  EXPECT_EQ(fleet_metrics_text(s).find("epochcast_epoch_seconds{"), std::string::npos);
}

}  // namespace
