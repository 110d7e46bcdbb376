#include "epochcast/service/service.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "epochcast/core/error.hpp"

namespace epochcast {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

fs::path fresh_dir() {
  std::random_device rd;
  const fs::path dir = fs::temp_directory_path() / ("epochcast-service-" + std::to_string(rd()));
  fs::create_directories(dir);
  return dir;
}

TEST(TracePaths, FolderExpandsToMetricLogsSortedSkippingHostAndTruth) {
  const fs::path dir = fresh_dir();
  for (const char* name : {"b.smi.csv", "a.smi.csv", "a.host.csv", "a.truth.json", ".hidden.csv", "notes.txt", "c.log"})
    std::ofstream(dir / name) << "x\n";
  const auto paths = expand_trace_paths({dir.string()});
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(fs::path(paths[0]).filename(), "a.smi.csv");
  EXPECT_EQ(fs::path(paths[1]).filename(), "b.smi.csv");
  EXPECT_EQ(fs::path(paths[2]).filename(), "c.log");
  EXPECT_EQ(sibling_host_trace((dir / "a.smi.csv").string()), (dir / "a.host.csv").string());
  EXPECT_EQ(sibling_host_trace((dir / "b.smi.csv").string()), "");
  EXPECT_EQ(sibling_host_trace((dir / "a.host.csv").string()), "");  // never its own host
  // Files are kept as given, even if they would be skipped in a folder.
  EXPECT_EQ(expand_trace_paths({(dir / "a.host.csv").string()}).size(), 1u);
  fs::remove_all(dir);
}

TEST(TracePaths, MissingPathAndEmptyFolderAreErrors) {
  try {
    (void)expand_trace_paths({"/nonexistent/trace.csv"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/trace.csv"));
  }
  const fs::path dir = fresh_dir();
  try {
    (void)expand_trace_paths({dir.string()});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
  fs::remove_all(dir);
}

// A synthetic trace with a clear epoch structure; only some channels present.
Trace periodic_trace(const std::string& gpu_name) {
  Trace t;
  t.source = "synthetic";
  t.format = "canonical";
  t.gpu.name = gpu_name;
  const double dt = 0.1;
  for (int i = 0; i < 3000; ++i) t.time_s.push_back(i * dt);
  t.channel(Metric::kGpuUtil);
  t.channel(Metric::kPower);
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0, 1);
  for (int i = 0; i < 3000; ++i) {
    const double s = i * dt;
    const bool busy = s >= 20 && s < 280;
    const bool dip = std::fmod(s - 20, 20.0) > 18.5;
    t.find(Metric::kGpuUtil)->values[i] = busy ? (dip ? 20 + noise(rng) : 97 + noise(rng)) : 0;
    t.find(Metric::kPower)->values[i] = busy ? (dip ? 90 + noise(rng) : 250 + 3 * noise(rng)) : 30;
  }
  return t;
}

TEST(Service, PredictsEveryGpuWarnsAboutMissingChannelsAndRefusesUnknownGpus) {
  const Service service;  // default model: cached after the first fit
  const Trace trace = periodic_trace("Tesla T4");
  const PredictReport r = service.predict(trace, {});
  ASSERT_TRUE(r.source.detected.found) << r.source.detected.reason;
  EXPECT_NEAR(r.source.measured_epoch_s, 20.0, 0.6);
  EXPECT_EQ(r.source.gpu, "t4");
  EXPECT_TRUE(r.source.in_training_data);
  EXPECT_EQ(r.predictions.size(), service.gpu_ids().size());
  const GpuPrediction* t4 = r.find("t4");
  ASSERT_NE(t4, nullptr);
  EXPECT_TRUE(t4->measured);
  bool missing_warned = false;
  for (const auto& w : r.warnings) missing_warned |= w.find("missing from the trace") != std::string::npos;
  EXPECT_TRUE(missing_warned);  // no memory-util or clock channels in this trace

  PredictRequest bad_source;
  bad_source.source_gpu = "Voodoo2";
  EXPECT_THROW((void)service.predict(trace, bad_source), Error);
  PredictRequest bad_target;
  bad_target.gpus = {"t4", "nosuch"};
  try {
    (void)service.predict(trace, bad_target);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_THAT(e.what(), HasSubstr("h200"));  // the message lists the catalog
  }
  PredictRequest zero_epochs;
  zero_epochs.epochs = 0;
  EXPECT_THROW((void)service.predict(trace, zero_epochs), Error);
  try {
    (void)service.predict(periodic_trace(""), {});  // no GPU name in the trace or the request
    FAIL();
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), "source_gpu");
  }
}

TEST(Service, FlatTraceGivesNoPredictionAndSaysWhy) {
  const Service service;
  Trace t = periodic_trace("Tesla T4");
  for (auto& c : t.channels)
    for (auto& v : c.values) v = 50;
  const PredictReport r = service.predict(t, {});
  EXPECT_FALSE(r.source.detected.found);
  EXPECT_TRUE(r.predictions.empty());
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_THAT(r.warnings.back(), HasSubstr("give the source's epoch time"));
  PredictRequest given;
  given.source_epoch_s = 20;
  const PredictReport g = service.predict(t, given);
  EXPECT_EQ(g.source.epoch_time_from, "given");
  EXPECT_FALSE(g.predictions.empty());
}

}  // namespace
}  // namespace epochcast

TEST(ServiceCatalogId, NvidiaSmiNamesAndIdsMapToTheCatalog) {
  const epochcast::Service service;
  EXPECT_EQ(service.catalog_id("NVIDIA H100 80GB HBM3").value_or(""), "h100-sxm");
  EXPECT_EQ(service.catalog_id("a100-80gb").value_or(""), "a100-80gb");
  EXPECT_EQ(service.catalog_id("NVIDIA A100-SXM4-80GB").value_or(""), "a100-80gb");
  EXPECT_FALSE(service.catalog_id("NVIDIA Imaginary 9000").has_value());
}
