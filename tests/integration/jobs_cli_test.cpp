// predict --job/--store, jobs, eval --store through the built CLI on a real store file.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_run.hpp"

namespace epochcast {
namespace {

using testing::run_cli;
namespace fs = std::filesystem;

const std::string kTrace = std::string(EPOCHCAST_TEST_DATA) + "/h200/resnet18_32_bs128_cpuloader.smi.csv";

class JobsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("epochcast-jobs-cli-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = (dir_ / "jobs.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  nlohmann::json json_of(const std::string& args) {
    const auto r = run_cli(args + " 2>/dev/null");
    EXPECT_EQ(r.status, 0) << args << "\n" << r.out;
    return nlohmann::json::parse(r.out);
  }
  fs::path dir_;
  std::string db_;
};

TEST_F(JobsCli, TwoRunsOfOneJobMakeAPairAndCheckThePrediction) {
  const auto first = json_of("predict " + kTrace + " --job r18 --store " + db_ + " --gpus a100-80gb --json");
  ASSERT_EQ(first["store"]["run_id"], 1);
  double predicted = 0;
  for (const auto& p : first["predictions"])
    if (p["gpu"] == "a100-80gb") predicted = p["epoch_s"].get<double>();
  ASSERT_GT(predicted, 0);
  // The same job measured on the A100, 10 % slower than predicted.
  const auto second = json_of("predict " + kTrace + " --job r18 --store " + db_ + " --source-gpu a100-80gb --epoch-s " +
                              std::to_string(predicted * 1.1) + " --gpus h200 --json");
  ASSERT_EQ(second["store"]["run_id"], 2);
  bool checked = false;
  for (const auto& w : second["warnings"]) checked |= w.get<std::string>().find("had predicted") != std::string::npos;
  EXPECT_TRUE(checked) << second["warnings"].dump();

  const auto list = json_of("jobs list --store " + db_ + " --json");
  ASSERT_EQ(list["runs"].size(), 2u);
  EXPECT_EQ(list["runs"][1]["gpu"], "a100-80gb");
  const auto pairs = json_of("jobs pairs --store " + db_ + " --json");
  bool found = false;
  for (const auto& p : pairs["gpu_pairs"])
    if (p["source_gpu"] == "h200" && p["target_gpu"] == "a100-80gb") {
      found = true;
      EXPECT_EQ(p["pairs"], 1);
      EXPECT_EQ(p["checked_predictions"], 1);
      EXPECT_NEAR(p["prediction_mape_pct"].get<double>(), 100.0 / 11, 0.5);  // 10 % slower: 9.1 % off
    }
  EXPECT_TRUE(found) << pairs.dump();
  EXPECT_TRUE(pairs["refused"].empty());
  const auto eval = json_of("eval --store " + db_ + " --json");
  EXPECT_EQ(eval["pairs"], 2);
  EXPECT_EQ(eval["jobs"], 1);

  // Export, forget everything, import: the runs come back.
  const auto exported = run_cli("jobs export --store " + db_ + " -o " + (dir_ / "runs.jsonl").string() + " 2>/dev/null");
  ASSERT_EQ(exported.status, 0);
  EXPECT_EQ(run_cli("jobs forget --job r18 --store " + db_).status, 0);
  EXPECT_EQ(json_of("jobs list --store " + db_ + " --json")["runs"].size(), 0u);
  EXPECT_EQ(json_of("jobs import " + (dir_ / "runs.jsonl").string() + " --store " + db_ + " --json")["imported"], 2);
  EXPECT_EQ(json_of("jobs show 3 --store " + db_ + " --json")["job_key"], "r18");
}

TEST_F(JobsCli, KeyReusedForAnotherWorkloadIsRefusedWithAReason) {
  json_of("predict " + kTrace + " --job reused --store " + db_ + " --gpus t4 --json");
  // "The same job" on a T4 taking 500 s an epoch: no T4 is 100x slower than an H200 on one workload.
  json_of("predict " + kTrace + " --job reused --store " + db_ + " --source-gpu t4 --epoch-s 500 --gpus h200 --json");
  const auto pairs = json_of("jobs pairs --store " + db_ + " --json");
  ASSERT_EQ(pairs["refused"].size(), 1u) << pairs.dump();
  EXPECT_NE(pairs["refused"][0]["reason"].get<std::string>().find("reused"), std::string::npos);
  const auto eval = run_cli("eval --store " + db_ + " --json 2>/dev/null");
  EXPECT_NE(eval.status, 0);  // no usable pair left
}

TEST_F(JobsCli, StoreThatIsNotADatabaseIsRefusedAndKept) {
  { std::ofstream(db_) << "this is not a database, and it is the operator's file\n"; }
  const auto r = run_cli("predict " + kTrace + " --job x --store " + db_ + " --json 2>/dev/null");
  EXPECT_EQ(r.status, 4) << r.out;
  EXPECT_NE(r.out.find("not an SQLite database"), std::string::npos) << r.out;
  std::ifstream in(db_);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str(), "this is not a database, and it is the operator's file\n");
  EXPECT_EQ(run_cli("jobs list --store " + (dir_ / "missing.db").string() + " 2>/dev/null").status, 3);
}

TEST_F(JobsCli, LockedStoreStillAnswersThePredictionAndSaysItWasNotRecorded) {
  json_of("predict " + kTrace + " --job a --store " + db_ + " --gpus t4 --json");
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);  // another writer
  const auto r = json_of("predict " + kTrace + " --job a --store " + db_ + " --gpus t4 --json");
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  EXPECT_FALSE(r["predictions"].empty());
  bool said = false;
  for (const auto& w : r["warnings"]) said |= w.get<std::string>().find("not recorded") != std::string::npos;
  EXPECT_TRUE(said) << r["warnings"].dump();
  EXPECT_EQ(json_of("jobs list --store " + db_ + " --json")["runs"].size(), 1u);
}

TEST_F(JobsCli, JobKeyWithoutAStoreIsRefusedNamingTheField) {
  const auto r = run_cli("predict " + kTrace + " --job x --json 2>/dev/null");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--job"), std::string::npos) << r.out;
}


// The store rules live in the service (JobsRequest); the CLI words their fields as its flags.
TEST_F(JobsCli, NoStoreAndConflictingSelectorsNameTheFlags) {
  const auto none = testing::run_command(std::string("env -u EPOCHCAST_STORE ") + EPOCHCAST_CLI + " jobs list --json 2>/dev/null");
  EXPECT_EQ(none.status, 2) << none.out;
  EXPECT_NE(none.out.find("--store is needed"), std::string::npos) << none.out;
  json_of("predict " + kTrace + " --job a --store " + db_ + " --gpus t4 --json");
  const auto both = run_cli("jobs forget 1 --job a --store " + db_ + " --json 2>/dev/null");
  EXPECT_EQ(both.status, 2) << both.out;
  EXPECT_NE(both.out.find("--job or a run id"), std::string::npos) << both.out;
  EXPECT_EQ(json_of("jobs list --store " + db_ + " --json")["runs"].size(), 1u);  // nothing forgotten
}

}  // namespace
}  // namespace epochcast
