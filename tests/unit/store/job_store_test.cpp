// The job store on real SQLite files in a temporary folder.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "epochcast/core/error.hpp"
#include "epochcast/store/job_store.hpp"

namespace epochcast {
namespace {

namespace fs = std::filesystem;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("epochcast-store-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name = "jobs.db") const { return (dir_ / name).string(); }
  fs::path dir_;
};

RunRecord sample_run(const std::string& gpu, const std::string& key, double epoch_s) {
  RunRecord r;
  r.gpu = gpu;
  r.job_key = key;
  r.catalog_version = "fnv1a64:test";
  r.trace = "trace.csv";
  r.detected = true;
  r.period_s = epoch_s;
  r.confidence = 0.8;
  r.epochs_found = 5;
  r.epoch_s = epoch_s;
  r.epoch_time_from = "detected";
  r.features.values[0] = 55.5;
  r.features.values[3] = 12.25;  // the rest stays missing (NaN)
  r.model_version = "v5/test";
  return r;
}

void raw_exec(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

template <typename F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no Error thrown";
  return Error(ErrorCode::kInternal, "none");
}

TEST_F(StoreTest, RecordedRunReadsBackWithItsPredictionsAfterReopening) {
  std::int64_t id = 0;
  {
    JobStore store(path(), StoreMode::kReadWrite);
    EXPECT_EQ(store.schema_version(), kStoreSchemaVersion);
    RunRecord r = sample_run("t4", "nightly", 42.5);
    r.predictions.push_back({"v100", 20.0, 18.0, 22.0, 0.05});
    r.predictions.push_back({"a10g", 30.0, 27.0, 33.0, 0});
    id = store.record(r).id;
  }
  JobStore store(path(), StoreMode::kReadOnly);
  ASSERT_EQ(store.run_count(), 1u);
  const auto r = store.run(id);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->gpu, "t4");
  EXPECT_EQ(r->job_key, "nightly");
  EXPECT_EQ(r->uid.size(), 32u);
  EXPECT_EQ(r->recorded_at.size(), 20u);
  EXPECT_DOUBLE_EQ(r->epoch_s, 42.5);
  EXPECT_TRUE(r->detected);
  EXPECT_EQ(r->epochs_found, 5);
  EXPECT_DOUBLE_EQ(r->features.values[0], 55.5);
  EXPECT_DOUBLE_EQ(r->features.values[3], 12.25);
  EXPECT_TRUE(std::isnan(r->features.values[1]));
  ASSERT_EQ(r->predictions.size(), 2u);
  ASSERT_TRUE(r->prediction_for("v100"));
  EXPECT_DOUBLE_EQ(r->prediction_for("v100")->epoch_s, 20.0);
  EXPECT_DOUBLE_EQ(r->prediction_for("v100")->calibration_log, 0.05);
  EXPECT_EQ(store.runs(std::string("other")).size(), 0u);
  EXPECT_EQ(store.runs(std::string("nightly")).size(), 1u);
}

// What pairs and refits read: only runs with a job key and a measured time, in id order; and
// the cached statements keep recording (and checking feedback) right across many runs.
TEST_F(StoreTest, MeasuredJobRunsAreTheKeyedTimedRunsOnly) {
  JobStore store(path(), StoreMode::kReadWrite);
  std::vector<std::int64_t> want;
  for (int i = 0; i < 30; ++i) {
    RunRecord r = sample_run(i % 2 ? "t4" : "v100", i % 3 == 0 ? "" : "job-" + std::to_string(i % 5), i % 7 == 0 ? 0 : 10.0 + i);
    r.predictions.push_back({i % 2 ? "v100" : "t4", 5.0 + i, 4.0, 6.0 + i, 0});
    const RecordResult got = store.record(r);
    if (!r.job_key.empty() && r.epoch_s > 0) want.push_back(got.id);
  }
  const auto runs = store.measured_job_runs();
  std::vector<std::int64_t> ids;
  for (const auto& r : runs) {
    ids.push_back(r.id);
    EXPECT_FALSE(r.job_key.empty());
    EXPECT_GT(r.epoch_s, 0);
    EXPECT_TRUE(r.predictions.empty());
    EXPECT_DOUBLE_EQ(r.features.values[3], 12.25);
  }
  EXPECT_EQ(ids, want);
  EXPECT_EQ(store.pairable_runs().first, want.size());
  EXPECT_EQ(store.run_count(), 30u);
  // Every keyed run after the first of its job on the other GPU checked one earlier prediction.
  EXPECT_FALSE(store.feedback().empty());
  for (const auto& r : store.runs()) EXPECT_EQ(r.predictions.size(), 1u) << r.id;
}

// watch records an ended job once under its trace name; a restarted watcher reading it again
// (or a second writer) gets the stored run's id back and writes nothing.
TEST_F(StoreTest, RecordOnceKeepsOneRunPerTraceName) {
  JobStore store(path(), StoreMode::kReadWrite);
  RunRecord a = sample_run("h100-sxm", "ml/r50", 3.2);
  a.trace = "http://prom:9090 job GPU-1/2026-12-04T01:00:00Z";
  const RecordResult first = store.record_once(a);
  EXPECT_TRUE(first.recorded);
  const RecordResult again = store.record_once(a);
  EXPECT_FALSE(again.recorded);
  EXPECT_EQ(again.id, first.id);
  RunRecord b = a;
  b.trace = "http://prom:9090 job GPU-1/2026-12-04T02:00:00Z";  // the GPU's next job
  EXPECT_TRUE(store.record_once(b).recorded);
  EXPECT_EQ(store.run_count(), 2u);
  // record() itself never deduplicates: a file predicted twice is two runs.
  store.record(a);
  EXPECT_EQ(store.run_count(), 3u);
}

TEST_F(StoreTest, RunWithoutGpuIsRefusedNamingTheField) {
  JobStore store(path(), StoreMode::kReadWrite);
  RunRecord r = sample_run("", "k", 1);
  const Error e = error_of([&] { store.record(r); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(e.what()).find("'gpu'"), std::string::npos) << e.what();
  EXPECT_EQ(store.run_count(), 0u);
}

TEST_F(StoreTest, ArrivingRunChecksTheEarlierPredictionForItsGpu) {
  JobStore store(path(), StoreMode::kReadWrite);
  RunRecord a = sample_run("t4", "job-1", 40);
  a.predictions.push_back({"v100", 10.0, 9, 11, 0});
  const auto ida = store.record(a).id;
  store.record(sample_run("p100", "job-1", 30));  // no prediction of t4's for p100: no feedback
  const RecordResult got = store.record(sample_run("v100", "job-1", 12.5));
  ASSERT_EQ(got.feedback.size(), 1u);
  EXPECT_EQ(got.feedback[0].predicted_by, ida);
  EXPECT_EQ(got.feedback[0].source_gpu, "t4");
  EXPECT_DOUBLE_EQ(got.feedback[0].predicted_s, 10.0);
  EXPECT_DOUBLE_EQ(got.feedback[0].measured_s, 12.5);
  EXPECT_NEAR(got.feedback[0].abs_pct_error(), 20.0, 1e-9);
  EXPECT_EQ(store.feedback().size(), 1u);
  // Another job's run on v100 checks nothing.
  EXPECT_TRUE(store.record(sample_run("v100", "job-2", 12.5)).feedback.empty());
}

// The per GPU pair aggregate (/metrics, jobs pairs) is the mean of the feedback rows' errors.
TEST_F(StoreTest, PredictionErrorsAggregateTheFeedbackPerGpuPair) {
  JobStore store(path(), StoreMode::kReadWrite);
  EXPECT_TRUE(store.prediction_errors().empty());
  for (const char* job : {"j1", "j2"}) {
    RunRecord a = sample_run("t4", job, 40);
    a.predictions.push_back({"v100", 10.0, 9, 11, 0});
    a.predictions.push_back({"p100", 20.0, 18, 22, 0});
    store.record(a);
  }
  store.record(sample_run("v100", "j1", 12.5));  // predicted 10: 20 % off, log(10/12.5)
  store.record(sample_run("v100", "j2", 8.0));   // predicted 10: 25 % off, log(10/8)
  store.record(sample_run("p100", "j1", 20.0));  // exact
  const auto errors = store.prediction_errors();
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].source_gpu, "t4");
  EXPECT_EQ(errors[0].target_gpu, "p100");
  EXPECT_EQ(errors[0].checked, 1u);
  EXPECT_NEAR(errors[0].mean_abs_error_ratio, 0.0, 1e-12);
  EXPECT_EQ(errors[1].target_gpu, "v100");
  EXPECT_EQ(errors[1].checked, 2u);
  double mean = 0;
  for (const auto& f : store.feedback())
    if (f.target_gpu == "v100") mean += f.abs_pct_error() / 100 / 2;
  EXPECT_NEAR(errors[1].mean_abs_error_ratio, mean, 1e-12);
  EXPECT_NEAR(errors[1].mean_abs_error_ratio, 0.225, 1e-12);
  EXPECT_NEAR(errors[1].mean_log_ratio, (std::log(10 / 12.5) + std::log(10 / 8.0)) / 2, 1e-12);
  EXPECT_EQ(store.pairable_runs(), (std::pair<std::size_t, std::int64_t>{5, 5}));
}

TEST_F(StoreTest, ForgettingAJobRemovesItsRunsPredictionsAndFeedback) {
  JobStore store(path(), StoreMode::kReadWrite);
  RunRecord a = sample_run("t4", "gone", 40);
  a.predictions.push_back({"v100", 10.0, 9, 11, 0});
  store.record(a);
  store.record(sample_run("v100", "gone", 12));
  store.record(sample_run("v100", "kept", 12));
  ASSERT_EQ(store.feedback().size(), 1u);
  EXPECT_EQ(store.forget_job("gone"), 2u);
  EXPECT_EQ(store.run_count(), 1u);
  EXPECT_TRUE(store.feedback().empty());
  EXPECT_EQ(store.forget_run(store.runs().front().id), 1u);
  EXPECT_EQ(store.forget_run(12345), 0u);
  EXPECT_EQ(store.run_count(), 0u);
}

TEST_F(StoreTest, ExportImportsIntoAnotherStoreAndAgainSkipsKnownRuns) {
  JobStore a(path("a.db"), StoreMode::kReadWrite);
  RunRecord r = sample_run("t4", "k", 40);
  r.predictions.push_back({"v100", 10.0, 9, 11, 0});
  a.record(r);
  a.record(sample_run("v100", "k", 12));
  a.record(sample_run("a10g", "", 7));
  std::stringstream out;
  a.export_jsonl(out);
  const std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);

  JobStore b(path("b.db"), StoreMode::kReadWrite);
  std::istringstream in1(text);
  const ImportResult first = b.import_jsonl(in1, "runs.jsonl");
  EXPECT_EQ(first.imported, 3u);
  EXPECT_EQ(first.skipped_known, 0u);
  std::istringstream in2(text);
  const ImportResult second = b.import_jsonl(in2, "runs.jsonl");
  EXPECT_EQ(second.imported, 0u);
  EXPECT_EQ(second.skipped_known, 3u);
  const auto ra = a.runs(), rb = b.runs();
  ASSERT_EQ(rb.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(ra[i].uid, rb[i].uid);
    EXPECT_EQ(ra[i].gpu, rb[i].gpu);
    EXPECT_DOUBLE_EQ(ra[i].features.values[0], rb[i].features.values[0]);
  }
  EXPECT_EQ(b.feedback().size(), 1u);  // recomputed on import
}

TEST_F(StoreTest, BadImportLineImportsNothingAndNamesTheLine) {
  JobStore a(path("a.db"), StoreMode::kReadWrite);
  a.record(sample_run("t4", "k", 40));
  std::stringstream out;
  a.export_jsonl(out);
  JobStore b(path("b.db"), StoreMode::kReadWrite);
  std::istringstream in(out.str() + "{\"uid\": \"x\", \"recorded_at\": \"t\"}\n");
  const Error e = error_of([&] { (void)b.import_jsonl(in, "runs.jsonl"); });
  EXPECT_EQ(e.code(), ErrorCode::kParse);
  EXPECT_NE(std::string(e.what()).find("runs.jsonl:2"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("'gpu'"), std::string::npos) << e.what();
  EXPECT_EQ(b.run_count(), 0u);
  std::istringstream garbage("not json\n");
  EXPECT_EQ(error_of([&] { (void)b.import_jsonl(garbage, "g.jsonl"); }).code(), ErrorCode::kParse);
}

TEST_F(StoreTest, NewerSchemaIsRefusedNamingBothVersionsAndLeftUnchanged) {
  { JobStore s(path(), StoreMode::kReadWrite); s.record(sample_run("t4", "k", 1)); }
  raw_exec(path(), "PRAGMA user_version = 99");
  const std::string before = file_bytes(path());
  for (StoreMode mode : {StoreMode::kReadWrite, StoreMode::kReadOnly}) {
    const Error e = error_of([&] { JobStore s(path(), mode); });
    EXPECT_EQ(e.code(), ErrorCode::kSchemaMismatch);
    EXPECT_NE(std::string(e.what()).find("99"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(kStoreSchemaVersion)), std::string::npos) << e.what();
  }
  EXPECT_EQ(file_bytes(path()), before);
}

TEST_F(StoreTest, VersionOneStoreIsMigratedKeepingItsRuns) {
  { JobStore s(path(), StoreMode::kReadWrite); s.record(sample_run("t4", "k", 3)); }
  // What a version-1 store looked like: no feedback table.
  raw_exec(path(), "DROP TABLE feedback; PRAGMA user_version = 1;");
  {
    JobStore ro(path(), StoreMode::kReadOnly);
    EXPECT_EQ(ro.schema_version(), 1);
    EXPECT_EQ(ro.run_count(), 1u);
    EXPECT_TRUE(ro.feedback().empty());
  }
  JobStore s(path(), StoreMode::kReadWrite);
  EXPECT_EQ(s.schema_version(), 2);
  EXPECT_EQ(s.run_count(), 1u);
  RunRecord a = sample_run("t4", "m", 40);
  a.predictions.push_back({"v100", 10.0, 9, 11, 0});
  s.record(a);
  EXPECT_EQ(s.record(sample_run("v100", "m", 11)).feedback.size(), 1u);  // the new table works
}

TEST_F(StoreTest, FileThatIsNotADatabaseIsRefusedAndLeftUnchanged) {
  { std::ofstream(path()) << "model,batchsize\nresnet,32\n" << std::string(5000, 'x'); }
  const std::string before = file_bytes(path());
  const Error e = error_of([&] { JobStore s(path(), StoreMode::kReadWrite); });
  EXPECT_EQ(e.code(), ErrorCode::kParse);
  EXPECT_NE(std::string(e.what()).find(path()), std::string::npos) << e.what();
  EXPECT_EQ(file_bytes(path()), before);
}

TEST_F(StoreTest, AnotherProgramsDatabaseIsRefused) {
  raw_exec(path(), "CREATE TABLE photos(id INTEGER); INSERT INTO photos VALUES(1);");
  const Error e = error_of([&] { JobStore s(path(), StoreMode::kReadWrite); });
  EXPECT_EQ(e.code(), ErrorCode::kParse);
  EXPECT_NE(std::string(e.what()).find("not an epochcast job store"), std::string::npos) << e.what();
}

TEST_F(StoreTest, MissingStoreIsAnErrorWhenReading) {
  const Error e = error_of([&] { JobStore s(path("none.db"), StoreMode::kReadOnly); });
  EXPECT_EQ(e.code(), ErrorCode::kIo);
  EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  EXPECT_FALSE(fs::exists(path("none.db")));
}

TEST_F(StoreTest, ReadOnlyFolderIsRefusedBeforeAnyWrite) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes read-only files";
  { JobStore s(path(), StoreMode::kReadWrite); s.record(sample_run("t4", "k", 1)); }
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  const Error e = error_of([&] { JobStore s(path(), StoreMode::kReadWrite); });
  EXPECT_EQ(e.code(), ErrorCode::kIo);
  EXPECT_NE(std::string(e.what()).find("read-only"), std::string::npos) << e.what();
}

TEST_F(StoreTest, WriterLockedOutPastTheTimeoutGetsAClearErrorAndLosesNothing) {
  { JobStore s(path(), StoreMode::kReadWrite); s.record(sample_run("t4", "k", 1)); }
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path().c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  JobStore s(path(), StoreMode::kReadWrite);
  const Error e = error_of([&] { s.record(sample_run("v100", "k", 2)); });
  EXPECT_EQ(e.code(), ErrorCode::kIo);
  EXPECT_NE(std::string(e.what()).find("locked"), std::string::npos) << e.what();
  EXPECT_EQ(s.run_count(), 1u);  // a reader is not blocked by the writer (WAL)
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  s.record(sample_run("v100", "k", 2));
  EXPECT_EQ(s.run_count(), 2u);
}

TEST_F(StoreTest, EightConcurrentWritersLoseNoRun) {
  constexpr int kWriters = 8, kRunsEach = 40;
  { JobStore s(path(), StoreMode::kReadWrite); }
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int w = 0; w < kWriters; ++w)
    threads.emplace_back([&, w] {
      try {
        JobStore s(path(), StoreMode::kReadWrite);
        for (int i = 0; i < kRunsEach; ++i) s.record(sample_run("t4", "w" + std::to_string(w), 1 + i));
      } catch (const std::exception& e) {
        ++failures;
        ADD_FAILURE() << e.what();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  JobStore s(path(), StoreMode::kReadOnly);
  EXPECT_EQ(s.run_count(), static_cast<std::size_t>(kWriters * kRunsEach));
  for (int w = 0; w < kWriters; ++w) EXPECT_EQ(s.runs("w" + std::to_string(w)).size(), kRunsEach + 0u);
}

TEST_F(StoreTest, SurvivesKill9OfTheWriterMidWrite) {
  { JobStore s(path(), StoreMode::kReadWrite); }
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    try {
      JobStore s(path(), StoreMode::kReadWrite);
      for (int i = 0;; ++i) {
        s.record(sample_run("t4", "k" + std::to_string(i % 7), 1 + i));
        const char c = 'x';  // one byte per committed run
        if (::write(fds[1], &c, 1) != 1) ::_exit(3);
      }
    } catch (...) {
      ::_exit(2);
    }
  }
  ::close(fds[1]);
  // Let it commit a few hundred runs, then kill it wherever it is.
  std::size_t committed = 0;
  char buf[256];
  while (committed < 300) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    ASSERT_GT(n, 0) << "writer died early";
    committed += static_cast<std::size_t>(n);
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) committed += static_cast<std::size_t>(n);
  ::close(fds[0]);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  JobStore s(path(), StoreMode::kReadWrite);
  // Every run reported committed is there; at most the one in flight more.
  EXPECT_GE(s.run_count(), committed);
  EXPECT_LE(s.run_count(), committed + 1);
  s.record(sample_run("v100", "after", 2));
}

}  // namespace
}  // namespace epochcast
