// serve --store end to end: uploads recorded under load and through kill -9, the refit route
// swapping the model, /metrics' running error per GPU pair. Real server process, real SQLite file.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sqlite3.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "collect_process.hpp"

namespace epochcast {
namespace {

namespace fs = std::filesystem;
using testing::Process;
using testing::TempDir;

const std::string kTrace = std::string(EPOCHCAST_TEST_DATA) + "/h200/resnet50_224_bs256_bf16.smi.csv";

// One query's single value from the store file, opened read-only as another program would.
std::string sql_value(const fs::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(h);
    return "cannot open";
  }
  std::string out;
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(st, 0);
    out = t ? reinterpret_cast<const char*>(t) : "NULL";
  } else {
    out = std::string("error: ") + sqlite3_errmsg(h);
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  return out;
}

class ServeStore : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<TempDir>("serve-store");
    db_ = dir_->path() / "jobs.db";
    trace_ = testing::read_file(kTrace);
  }
  void start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {EPOCHCAST_CLI, "serve", "--listen", "127.0.0.1:0", "--threads", "4",
                                     "--store",     db_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    server_ = std::make_unique<Process>(args, testing::EnvVars{}, dir_->path());
    port_ = server_->serving_port(120);
    ASSERT_GT(port_, 0) << server_->err();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(300, 0);
    c.set_connection_timeout(10, 0);
    return c;
  }
  httplib::Result predict(const std::string& query) const {
    return client().Post(("/v1/predict?" + query).c_str(), trace_, "text/csv");
  }
  nlohmann::json predict_ok(const std::string& query) const {
    const auto res = predict(query);
    EXPECT_TRUE(res);
    if (!res) return {};
    EXPECT_EQ(res->status, 200) << res->body;
    return nlohmann::json::parse(res->body, nullptr, false);
  }
  // The predicted epoch time on `gpu` of an answer.
  static double predicted_on(const nlohmann::json& answer, const std::string& gpu) {
    for (const auto& p : answer["predictions"])
      if (p["gpu"] == gpu) return p["epoch_s"].get<double>();
    return 0;
  }
  std::string runs() const { return sql_value(db_, "SELECT count(*) FROM runs"); }

  std::unique_ptr<TempDir> dir_;
  fs::path db_;
  std::string trace_;
  std::unique_ptr<Process> server_;
  int port_ = -1;
};

// 8 clients uploading at once: every answer carries its own run id and the store holds each.
TEST_F(ServeStore, EightConcurrentUploadsLoseNothing) {
  start();
  constexpr int kClients = 8, kEach = 6;
  std::mutex mu;
  std::set<long long> ids;
  std::atomic<int> failed{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&, c] {
      for (int i = 0; i < kEach; ++i) {
        // Half the runs are measured on a second GPU of the same job: pairs form, calibration refreshes.
        const std::string query = i % 2 == 0 ? "gpus=a100-80gb&job=c" + std::to_string(c)
                                             : "gpus=h200&source_gpu=a100-80gb&epoch_s=12.5&job=c" + std::to_string(c);
        const auto res = predict(query);
        const auto j = res && res->status == 200 ? nlohmann::json::parse(res->body, nullptr, false) : nlohmann::json();
        if (!j.is_object() || !j["store"]["run_id"].is_number()) {
          ++failed;
          continue;
        }
        std::lock_guard lock(mu);
        ids.insert(j["store"]["run_id"].get<long long>());
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(ids.size(), std::size_t{kClients * kEach});
  EXPECT_EQ(runs(), std::to_string(kClients * kEach));
  EXPECT_EQ(sql_value(db_, "SELECT count(DISTINCT job_key) FROM runs"), std::to_string(kClients));
  // Each job's a100 runs checked the h200 runs' a100 predictions before them.
  EXPECT_NE(sql_value(db_, "SELECT count(*) FROM feedback"), "0");
}

// SIGKILL while 8 clients upload: SQLite's commit survives the process, so the store passes
// its integrity check and holds every run the server answered with an id (plus at most one
// per client in flight, committed but not yet answered).
TEST_F(ServeStore, KillDashNineMidWriteLeavesTheStoreIntact) {
  start();
  std::mutex mu;
  std::set<long long> answered;
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  constexpr int kClients = 8;
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&, c] {
      while (!stop) {
        const auto res = predict("gpus=t4&job=k" + std::to_string(c % 3));
        if (!res) return;  // the server is gone
        const auto j = res->status == 200 ? nlohmann::json::parse(res->body, nullptr, false) : nlohmann::json();
        if (j.is_object() && j["store"]["run_id"].is_number()) {
          std::lock_guard lock(mu);
          answered.insert(j["store"]["run_id"].get<long long>());
        }
      }
    });
  // Until enough runs are committed that the kill lands among writes.
  for (int i = 0; i < 6000; ++i) {
    {
      std::lock_guard lock(mu);
      if (answered.size() >= 40) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  server_->signal(SIGKILL);
  EXPECT_EQ(server_->wait(10), 128 + SIGKILL);
  stop = true;
  for (auto& t : clients) t.join();
  ASSERT_GE(answered.size(), 40u) << server_->err();

  EXPECT_EQ(sql_value(db_, "PRAGMA integrity_check"), "ok");
  const long long count = std::stoll(runs());
  EXPECT_GE(count, static_cast<long long>(answered.size()));
  EXPECT_LE(count, static_cast<long long>(answered.size()) + kClients);
  for (long long id : answered)
    EXPECT_EQ(sql_value(db_, "SELECT count(*) FROM runs WHERE id = " + std::to_string(id)), "1") << "run " << id;
  // Every committed run has its predictions (one transaction each).
  EXPECT_EQ(sql_value(db_, "SELECT count(*) FROM runs r WHERE NOT EXISTS (SELECT 1 FROM predictions p "
                           "WHERE p.run_id = r.id)"),
            "0");

  // A new server on the same file goes on from there.
  start();
  const auto j = predict_ok("gpus=t4&job=after");
  EXPECT_EQ(j["store"]["run_id"].get<long long>(), std::stoll(sql_value(db_, "SELECT max(id) FROM runs")));
  EXPECT_EQ(std::stoll(runs()), count + 1);
}

// Checked predictions show as epochcast_prediction_error_ratio per GPU pair.
TEST_F(ServeStore, MetricsShowTheRunningErrorPerGpuPair) {
  start();
  auto families = client().Get("/metrics");
  ASSERT_TRUE(families);
  EXPECT_EQ(families->status, 200);
  EXPECT_NE(families->body.find("# TYPE epochcast_prediction_error_ratio gauge"), std::string::npos);
  EXPECT_EQ(families->body.find("epochcast_prediction_error_ratio{"), std::string::npos) << families->body;

  const double predicted = predicted_on(predict_ok("gpus=a100-80gb&job=r18"), "a100-80gb");
  ASSERT_GT(predicted, 0);
  // Measured 10 % slower than predicted: |p - m| / m = 1/11.
  predict_ok("gpus=h200&source_gpu=a100-80gb&job=r18&epoch_s=" + std::to_string(predicted * 1.1));
  const auto res = client().Get("/metrics");
  ASSERT_TRUE(res);
  const std::string sample = "epochcast_prediction_error_ratio{source_gpu=\"h200\",target_gpu=\"a100-80gb\"} ";
  const auto at = res->body.find(sample);
  ASSERT_NE(at, std::string::npos) << res->body;
  EXPECT_NEAR(std::stod(res->body.substr(at + sample.size())), 1.0 / 11, 1e-3) << res->body;
  EXPECT_NE(res->body.find("epochcast_prediction_checks{source_gpu=\"h200\",target_gpu=\"a100-80gb\"} 1\n"),
            std::string::npos)
      << res->body;
  const std::string log_sample = "epochcast_prediction_log_ratio{source_gpu=\"h200\",target_gpu=\"a100-80gb\"} ";
  const auto log_at = res->body.find(log_sample);
  ASSERT_NE(log_at, std::string::npos) << res->body;
  EXPECT_NEAR(std::stod(res->body.substr(log_at + log_sample.size())), std::log(1 / 1.1), 1e-3);
}

// POST /v1/model/refit learns from the store's pairs, writes a model file naming the rows, and
// every later prediction (and its store row) uses the new model.
TEST_F(ServeStore, RefitSwapsTheModelAndNamesTheStoreRows) {
  const fs::path model_file = dir_->path() / "refit.json";
  start({"--refit-model", model_file.string()});
  // No pairs yet: refused, the model stays.
  const auto early = client().Post("/v1/model/refit", "", "text/plain");
  ASSERT_TRUE(early);
  EXPECT_EQ(early->status, 400) << early->body;
  EXPECT_NE(early->body.find("no measured pair"), std::string::npos) << early->body;

  const auto before = nlohmann::json::parse(client().Get("/v1/model")->body);
  EXPECT_EQ(before["model"]["generation"], 0);
  for (const char* job : {"a", "b", "c"}) {
    predict_ok(std::string("gpus=a100-80gb&job=") + job);
    predict_ok(std::string("gpus=h200&source_gpu=a100-80gb&epoch_s=12.2&job=") + job);
  }
  const auto res = client().Post("/v1/model/refit", "", "text/plain");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const auto refit = nlohmann::json::parse(res->body)["refit"];
  EXPECT_EQ(refit["model"]["generation"], 1);
  EXPECT_EQ(refit["previous"]["version"], before["model"]["version"]);
  EXPECT_NE(refit["model"]["version"], before["model"]["version"]);
  EXPECT_EQ(refit["store_pairs"], 6);  // 3 jobs, both directions
  EXPECT_EQ(refit["store_rows"], "1-6");
  EXPECT_EQ(refit["model_file"], "refit.json");  // the base name only: no server paths
  const std::string trained_on = refit["model"]["trained_on"];
  EXPECT_NE(trained_on.find("store jobs.db runs 1-6"), std::string::npos) << trained_on;
  EXPECT_EQ(trained_on.find(dir_->path().string()), std::string::npos) << trained_on;

  // The file on disk names the rows (with the full path: it is the operator's file).
  const auto file = nlohmann::json::parse(testing::read_file(model_file), nullptr, false);
  ASSERT_TRUE(file.is_object());
  const std::string dataset = file["training"]["dataset"];
  EXPECT_NE(dataset.find("runs 1-6 (6 measured pairs"), std::string::npos) << dataset;

  const auto after = nlohmann::json::parse(client().Get("/v1/model")->body);
  EXPECT_EQ(after["model"]["version"], refit["model"]["version"]);
  EXPECT_EQ(after["refit"]["refits"], 1);
  EXPECT_EQ(after["refit"]["last"]["ok"], true);
  const auto next = predict_ok("gpus=t4&job=d");
  EXPECT_NE(next["model"].get<std::string>().find("refit 1"), std::string::npos) << next["model"];
  EXPECT_EQ(sql_value(db_, "SELECT model_version FROM runs ORDER BY id DESC LIMIT 1"),
            refit["model"]["version"].get<std::string>());
}

// Pairs of a GPU pair the bundled dataset already holds (v100 <-> p100) calibrate only: a refit
// with nothing else is refused and says why; with a pair the bundled data lacks it learns that
// one alone (store/pairs.hpp, kHeldGpuPairMinPairs; docs/store.md, "fit --store").
TEST_F(ServeStore, RefitLearnsOnlyGpuPairsTheBundledDataLacks) {
  start();
  for (const char* job : {"a", "b"}) {
    predict_ok(std::string("gpus=p100&source_gpu=v100&epoch_s=10&job=") + job);
    predict_ok(std::string("gpus=v100&source_gpu=p100&epoch_s=17&job=") + job);
  }
  const auto held = client().Post("/v1/model/refit", "", "text/plain");
  ASSERT_TRUE(held);
  EXPECT_EQ(held->status, 400) << held->body;
  EXPECT_NE(held->body.find("no measured pair to learn from"), std::string::npos) << held->body;
  EXPECT_NE(held->body.find("(p100->v100 2, v100->p100 2) calibrate the predictions and are not refitted"),
            std::string::npos)
      << held->body;
  EXPECT_EQ(nlohmann::json::parse(client().Get("/v1/model")->body)["model"]["generation"], 0);

  predict_ok("gpus=a100-80gb&job=m");
  predict_ok("gpus=h200&source_gpu=a100-80gb&epoch_s=12.2&job=m");
  const auto res = client().Post("/v1/model/refit", "", "text/plain");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const auto refit = nlohmann::json::parse(res->body)["refit"];
  EXPECT_EQ(refit["store_pairs"], 2);        // h200 <-> a100-80gb, both directions
  EXPECT_EQ(refit["calibration_only"], 4);   // the v100 <-> p100 ones
  EXPECT_EQ(refit["store_rows"], "5-6");
}

// --refit-every: the background refit picks up the pairs on its own, once; with nothing new
// after it, the next ticks fit nothing.
TEST_F(ServeStore, ScheduledRefitRunsOnceForNewPairs) {
  start({"--refit-every", "1"});
  predict_ok("gpus=a100-80gb&job=s");
  predict_ok("gpus=h200&source_gpu=a100-80gb&epoch_s=12.2&job=s");
  nlohmann::json model;
  for (int i = 0; i < 1200; ++i) {
    model = nlohmann::json::parse(client().Get("/v1/model")->body);
    if (model["model"]["generation"] == 1 && model["refit"]["running"] == false) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(model["model"]["generation"], 1) << model.dump();
  EXPECT_EQ(model["refit"]["every_s"], 1.0);
  EXPECT_EQ(model["refit"]["last"]["why"], "every 1 s");
  EXPECT_EQ(model["refit"]["last"]["result"]["store_rows"], "1-2");
  EXPECT_TRUE(fs::exists(db_.string() + ".refit.model.json"));  // the default --refit-model
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(nlohmann::json::parse(client().Get("/v1/model")->body)["refit"]["refits"], 1);
}

TEST(ServeStoreless, RefitWithoutAStoreIsRefusedAndSaysWhy) {
  TempDir dir("serve-nostore");
  Process server({EPOCHCAST_CLI, "serve", "--listen", "127.0.0.1:0"}, {}, dir.path());
  const int port = server.serving_port(120);
  ASSERT_GT(port, 0) << server.err();
  httplib::Client c("127.0.0.1", port);
  const auto res = c.Post("/v1/model/refit", "", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("--store"), std::string::npos) << res->body;
  const auto get = c.Get("/v1/model/refit");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
}

}  // namespace
}  // namespace epochcast
