// The job store link's calibration, kept between records (only the recorded run's job key is
// recomputed): always the calibration a fresh read of every run gives, also after another
// connection wrote to the store or a run replaced its key's latest on a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "epochcast/model/dataset.hpp"
#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/model/stacked_model.hpp"
#include "epochcast/store/calibration.hpp"
#include "epochcast/store/job_store.hpp"
#include "store_link.hpp"

namespace epochcast {
namespace {

namespace fs = std::filesystem;

class StoreLinkTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    catalog_ = new GpuCatalog(load_gpu_catalog(default_gpu_catalog_path()));
    dataset_ = new Dataset(load_dataset(default_dataset_path(), *catalog_));
    FitOptions quick;
    quick.xgb_rounds = 10;
    quick.trees = 10;
    quick.folds = 3;
    quick.meta_gpu_folds = false;
    model_ = new StackedModel(fit_model(*dataset_, *catalog_, quick));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete dataset_;
    delete catalog_;
  }
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("epochcast-store-link-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string db() const { return (dir_ / "jobs.db").string(); }

  // A run of dataset row `row` under `key`, its epoch time scaled by `scale`, recorded by `link`.
  static void record(StoreLink& link, std::size_t row, const std::string& key, double scale = 1.0) {
    const DatasetRow& r = dataset_->rows[row];
    PredictReport report;
    report.job_key = key;
    report.source.gpu = r.gpu_id;
    report.source.trace = key + "@" + r.gpu_id;
    report.source.measured_epoch_s = r.epoch_s * scale;
    report.source.epoch_time_from = "detected";
    report.source.detected.found = true;
    report.source.detected.period_s = r.epoch_s * scale;
    link.record(report, r.features, "v-test");
  }
  // What a fresh read of every measured run gives (the calibration before it was kept).
  Calibration fresh() const {
    const JobStore reader(db(), StoreMode::kReadOnly);
    const auto runs = reader.measured_job_runs();
    const PairSet set = measured_pairs(runs, model_epoch_predictor(*model_, *catalog_));
    return fit_calibration(pair_residuals(set, runs, *model_, *catalog_));
  }
  static void expect_same(const Calibration& got, const Calibration& want, const std::string& when) {
    ASSERT_EQ(got.pairs().size(), want.pairs().size()) << when;
    EXPECT_DOUBLE_EQ(got.residual_sd(), want.residual_sd()) << when;
    for (std::size_t i = 0; i < want.pairs().size(); ++i) {
      const auto& a = got.pairs()[i];
      const auto& b = want.pairs()[i];
      EXPECT_EQ(a.source_gpu + ">" + a.target_gpu, b.source_gpu + ">" + b.target_gpu) << when;
      EXPECT_EQ(a.pairs, b.pairs) << when;
      EXPECT_DOUBLE_EQ(a.log_bias, b.log_bias) << when << " " << a.source_gpu << ">" << a.target_gpu;
      EXPECT_DOUBLE_EQ(a.mean_log_residual, b.mean_log_residual) << when;
    }
  }
  static inline GpuCatalog* catalog_ = nullptr;
  static inline Dataset* dataset_ = nullptr;
  static inline StackedModel* model_ = nullptr;
  fs::path dir_;
};

TEST_F(StoreLinkTest, KeptCalibrationIsTheFreshOneAfterEveryChange) {
  StoreLink link(db(), *catalog_);
  const auto pairs = make_pairs(*dataset_);
  // 60 jobs, each one workload on two GPU types (a biased time on the target: a calibration
  // to learn), the calibration asked for after every record.
  std::set<std::string> gpu_pairs;
  std::size_t jobs = 0;
  for (std::size_t i = 0; i < pairs.size() && jobs < 60; i += 7, ++jobs) {
    const std::string key = "job-" + std::to_string(jobs);
    record(link, pairs[i].source, key);
    static_cast<void>(link.calibration_for(*model_));
    record(link, pairs[i].target, key, 1.15);
    gpu_pairs.insert(dataset_->rows[pairs[i].source].gpu_id + ">" + dataset_->rows[pairs[i].target].gpu_id);
    static_cast<void>(link.calibration_for(*model_));
  }
  const Calibration kept = link.calibration_for(*model_);
  ASSERT_FALSE(kept.empty());
  expect_same(kept, fresh(), "after 120 records");
  EXPECT_EQ(link.full_reads(), 1u) << "the store was read whole once, each record after it kept";
  bool learned = false;
  for (const auto& p : kept.pairs()) learned |= p.log_bias > 0.05;
  EXPECT_TRUE(learned) << "the 15 % bias on the targets is calibrated somewhere";

  // A later run of a key on a GPU it has a run on replaces it as the pair's side.
  record(link, pairs[0].target, "job-0", 0.7);
  expect_same(link.calibration_for(*model_), fresh(), "after a replacing run");

  // Another connection (another process, an import) writes: the link reads the store again.
  {
    JobStore other(db(), StoreMode::kReadWrite);
    RunRecord r;
    const DatasetRow& row = dataset_->rows[pairs[7].source];
    r.job_key = "job-1";
    r.gpu = row.gpu_id;
    r.catalog_version = "test";
    r.epoch_s = row.epoch_s * 2.5;
    r.features = row.features;
    other.record(r);
  }
  const Calibration after_other = link.calibration_for(*model_);
  expect_same(after_other, fresh(), "after another connection's run");
  EXPECT_EQ(link.full_reads(), 2u) << "another writer's run is read from the store";
  // ... and a forget there too.
  {
    JobStore other(db(), StoreMode::kReadWrite);
    other.forget_job("job-2");
  }
  expect_same(link.calibration_for(*model_), fresh(), "after another connection's forget");
  link.invalidate();
  expect_same(link.calibration_for(*model_), fresh(), "after invalidate");
}

}  // namespace
}  // namespace epochcast
