// `epochcast watch` and `serve --prometheus` end to end: the built CLI against a real
// Prometheus holding a backfilled fleet (watch_fleet.hpp).
#include <gtest/gtest.h>

#include <set>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli_run.hpp"
#include "watch_fleet.hpp"

using namespace epochcast::testing;

namespace {

class WatchCli : public SmallFleetSuite<> {
 protected:
  static std::vector<std::string> watch_args() {
    return {"watch", "--prometheus", fleet_->url(), "--lookback", "3h", "--gpus", "a100-80gb,l4"};
  }
};

// Every key of the contract with the fleet page (docs/watch.md, "GET /v1/fleet").
void expect_contract(const nlohmann::json& j) {
  for (const char* k : {"source", "shard", "every_s", "last_pass", "errors_total", "gpus"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["shard"], "1/1");
  for (const char* k : {"started", "seconds", "queries", "ok"}) EXPECT_TRUE(j["last_pass"].contains(k)) << k;
  ASSERT_EQ(j["gpus"].size(), 6u);
  bool some_prediction = false;
  for (const auto& g : j["gpus"]) {
    for (const char* k : {"uuid", "hostname", "gpu", "model_name", "catalog_id", "state", "jobs"}) EXPECT_TRUE(g.contains(k)) << k;
    EXPECT_TRUE(g["state"] == "busy" || g["state"] == "idle");
    for (const auto& job : g["jobs"]) {
      for (const char* k : {"id", "labels", "start", "end", "samples", "found", "epoch_s", "confidence", "why", "predictions"})
        EXPECT_TRUE(job.contains(k)) << k;
      for (const auto& p : job["predictions"]) {
        for (const char* k : {"target_gpu", "epoch_s", "lo_s", "hi_s", "usd_per_epoch"}) EXPECT_TRUE(p.contains(k)) << k;
        EXPECT_LE(p["lo_s"].get<double>(), p["epoch_s"].get<double>());
        EXPECT_GE(p["hi_s"].get<double>(), p["epoch_s"].get<double>());
        some_prediction = true;
      }
    }
  }
  EXPECT_TRUE(some_prediction);
}

TEST_F(WatchCli, OnceJsonKeepsTheFleetContract) {
  auto args = watch_args();
  for (const char* a : {"--once", "--json", "--quiet"}) args.push_back(a);
  TempDir dir("watch-once");
  const RunResult r = run_cli(args, {}, dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  expect_contract(j);
  EXPECT_EQ(j["source"], fleet_->url());
  EXPECT_TRUE(j["last_pass"]["ok"].get<bool>());
}

// --store --job-key: each ended job recorded under its key, readable with `jobs list`.
TEST_F(WatchCli, StoreRecordsEachEndedJobUnderItsKey) {
  TempDir dir("watch-store-cli");
  const std::string db = (dir / "jobs.db").string();
  auto args = watch_args();
  for (const char* a : {"--once", "--json", "--quiet", "--job-key", "{namespace}/{pod}", "--store"}) args.push_back(a);
  args.push_back(db);
  const RunResult r = run_cli(args, {}, dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::set<std::string> recorded;
  for (const auto& g : j["gpus"])
    for (const auto& job : g["jobs"]) {
      if (job["end"].is_null()) EXPECT_TRUE(job["store_run_id"].is_null()) << job.dump();
      if (!job["store_run_id"].is_null() && !job["job_key"].is_null()) recorded.insert(job["job_key"].get<std::string>());
    }
  EXPECT_TRUE(recorded.contains("ml/train-a")) << r.out;
  EXPECT_FALSE(recorded.contains("ml/train-f")) << "still running";
  const RunResult list = run_cli({"jobs", "list", "--store", db, "--json"}, {}, dir.path());
  ASSERT_EQ(list.status, 0) << list.err;
  EXPECT_NE(list.out.find("\"ml/train-a\""), std::string::npos) << list.out;
  EXPECT_EQ(list.out.find("ml/train-f"), std::string::npos) << list.out;
}

// With --store, /metrics also carries the running error of the checked predictions (as serve's).
TEST_F(WatchCli, ListenWithAStoreServesThePredictionErrors) {
  TempDir dir("watch-listen-store");
  auto args = watch_args();
  args.insert(args.begin(), EPOCHCAST_CLI);
  for (const char* a : {"--listen", "127.0.0.1:0", "--every", "1h", "--job-key", "{namespace}/{pod}", "--store"})
    args.push_back(a);
  args.push_back((dir / "jobs.db").string());
  Process watch(args, {}, dir.path());
  const int port = watch.serving_port(120);
  ASSERT_GT(port, 0) << watch.err();
  httplib::Client client("127.0.0.1", port);
  const nlohmann::json fleet = fleet_after_first_pass(client);
  ASSERT_GE(fleet.value("passes", 0), 1) << watch.err();
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("# TYPE epochcast_prediction_error_ratio gauge"), std::string::npos) << metrics->body;
  bool keyed = false;
  for (const auto& g : fleet["gpus"])
    for (const auto& j : g["jobs"]) keyed |= j["job_key"] == "ml/train-a" && !j["store_run_id"].is_null();
  EXPECT_TRUE(keyed) << fleet.dump();
  watch.signal(SIGINT);
  EXPECT_EQ(watch.wait(30), 0) << watch.err();
}

TEST_F(WatchCli, ListenServesFleetAndMetricsPromtoolAccepts) {
  TempDir dir("watch-listen");
  auto args = watch_args();
  args.insert(args.begin(), EPOCHCAST_CLI);
  for (const char* a : {"--listen", "127.0.0.1:0", "--every", "1h"}) args.push_back(a);
  Process watch(args, {}, dir.path());
  const int port = watch.serving_port(120);
  ASSERT_GT(port, 0) << watch.err();
  httplib::Client client("127.0.0.1", port);
  const nlohmann::json fleet = fleet_after_first_pass(client);
  ASSERT_GE(fleet.value("passes", 0), 1) << watch.err();
  expect_contract(fleet);
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  ASSERT_EQ(metrics->status, 200);
  {
    std::ofstream(dir / "metrics.txt") << metrics->body;
  }
  // promtool parses it; its only lint findings are the camelCase labels UUID, Hostname and
  // modelName, kept on purpose: they are dcgm-exporter's, so a query joins on(UUID) with DCGM series.
  const CommandResult lint = run_command("/usr/bin/promtool check metrics < " + (dir / "metrics.txt").string() + " 2>&1");
  std::istringstream findings(lint.out);
  std::size_t camel = 0;
  for (std::string l; std::getline(findings, l);) {
    if (l.find("label names should be written in 'snake_case' not 'camelCase'") != std::string::npos) ++camel;
    else ADD_FAILURE() << "promtool: " << l;
  }
  EXPECT_GT(camel, 0u) << "promtool's check ran";
  EXPECT_EQ(metrics->body.find("epochcast_prediction_error_ratio"), std::string::npos) << "no store, no checks";
  // The running job's detected epoch is on /metrics as in the JSON.
  const nlohmann::json* running = nullptr;
  for (const auto& g : fleet["gpus"])
    if (g["state"] == "busy" && !g["jobs"].empty() && g["jobs"].back()["found"].get<bool>()) running = &g;
  ASSERT_NE(running, nullptr) << fleet.dump(1);
  const std::string uuid = (*running)["uuid"];
  const std::regex line("epochcast_epoch_seconds\\{[^}]*UUID=\"" + uuid + "\"[^}]*pod=\"train-f\"[^}]*\\} ([0-9.e+]+)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(metrics->body, m, line)) << metrics->body.substr(0, 2000);
  EXPECT_NEAR(std::stod(m[1]), (*running)["jobs"].back()["epoch_s"].get<double>(), 0.01);
  EXPECT_NE(metrics->body.find("# TYPE epochcast_watch_errors_total counter"), std::string::npos);
  EXPECT_NE(metrics->body.find("epochcast_predicted_epoch_bound_seconds{"), std::string::npos);
  // The rest of serve's API is there too, and the fleet page that renders /v1/fleet.
  auto gpus = client.Get("/v1/gpus");
  ASSERT_TRUE(gpus);
  EXPECT_EQ(gpus->status, 200);
  auto page = client.Get("/fleet");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->get_header_value("Content-Type").find("text/html"), std::string::npos);
  watch.signal(SIGTERM);
  EXPECT_EQ(watch.wait(30), 0) << watch.err();
}

TEST_F(WatchCli, ServeHostsAWatcher) {
  TempDir dir("serve-watch");
  Process serve({EPOCHCAST_CLI, "serve", "--listen", "127.0.0.1:0", "--prometheus", fleet_->url(), "--lookback", "3h",
                 "--gpus", "l4"},
                {}, dir.path());
  const int port = serve.serving_port(120);
  ASSERT_GT(port, 0) << serve.err();
  httplib::Client client("127.0.0.1", port);
  const nlohmann::json fleet = fleet_after_first_pass(client);
  ASSERT_GE(fleet.value("passes", 0), 1) << serve.err();
  EXPECT_EQ(fleet["gpus"].size(), 6u);
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("epochcast_watch_passes_total"), std::string::npos);
  serve.signal(SIGTERM);
  EXPECT_EQ(serve.wait(30), 0) << serve.err();
}

TEST(WatchCliArgs, NonLoopbackListenNeedsATokenOrInsecure) {
  TempDir dir("watch-bind");
  const RunResult r =
      run_cli({"watch", "--prometheus", "http://127.0.0.1:1", "--listen", "0.0.0.0:0", "--quiet"}, {}, dir.path());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--token"), std::string::npos) << r.err;
}

TEST(WatchCliArgs, BadValuesNameTheFlag) {
  TempDir dir("watch-args");
  struct Bad {
    std::vector<std::string> args;
    const char* says;
  };
  for (const Bad& b : {Bad{{"--shard", "3/2"}, "--shard must be i/n with 1 <= i <= n"},
                       Bad{{"--every", "0s"}, "--every must be"},
                       Bad{{"--lookback", "forever"}, "--lookback must be a duration"},
                       Bad{{"--selector", "{pod=\"x\"}"}, "--selector takes label matchers only"},
                       Bad{{"--gpus", "nosuchgpu"}, "nosuchgpu"},
                       Bad{{"--job-key", "{job}", "--store", "x.db"}, "--job-key '{job}' names the scrape target"},
                       Bad{{"--job-key", "{namespace}/{pod"}, "--job-key '{' at character 13 is not closed"},
                       Bad{{"--job-key", "{namespace}/{pod}"}, "--job-key needs a job store"}}) {
    std::vector<std::string> args = {"watch", "--prometheus", "http://127.0.0.1:1", "--once"};
    args.insert(args.end(), b.args.begin(), b.args.end());
    const RunResult r = run_cli(args, {}, dir.path());
    EXPECT_NE(r.status, 0) << b.says;
    EXPECT_NE(r.err.find(b.says), std::string::npos) << r.err;
  }
  const RunResult bad_url = run_cli({"watch", "--prometheus", "localhost:9090", "--once"}, {}, dir.path());
  EXPECT_EQ(bad_url.status, 2);
  EXPECT_NE(bad_url.err.find("--prometheus must start with http://"), std::string::npos) << bad_url.err;
}

TEST(WatchCliArgs, UnreachableEndpointOnceFailsNamingIt) {
  TempDir dir("watch-down");
  const int port = free_port();
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  const RunResult r = run_cli({"watch", "--prometheus", url, "--once", "--timeout", "1s"}, {}, dir.path());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("cannot reach"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(url), std::string::npos) << r.err;
}

}  // namespace
