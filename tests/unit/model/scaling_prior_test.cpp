// The catalog's per-precision figures, the precision rules, the public table reader and the
// scaling prior fitted on it (docs/model.md, "Scaling prior").
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "epochcast/core/error.hpp"
#include "epochcast/model/gpu_catalog.hpp"
#include "epochcast/model/precision.hpp"
#include "epochcast/model/public_eval.hpp"
#include "epochcast/model/public_throughput.hpp"
#include "epochcast/model/scaling_prior.hpp"

namespace epochcast {
namespace {

const std::string kCatalog = EPOCHCAST_SOURCE_DIR "/data/gpus.csv";
const std::string kTable = EPOCHCAST_SOURCE_DIR "/data/public-throughput/lambda_pytorch_1gpu.csv";
const std::string kNames = EPOCHCAST_SOURCE_DIR "/data/public-throughput/names.csv";

std::string header() {
  return "id,name,smi_names,dataset_labels,architecture,compute_capability,sm_count,fp32_cores_per_sm,"
         "max_sm_clock_mhz,fp32_tflops,tensor_fp16_tflops,tensor_tf32_tflops,tensor_bf16_tflops,tensor_fp8_tflops,"
         "fp64_tflops,memory_gib,memory_type,memory_bandwidth_gbs,l2_cache_mib,tdp_w,form_factor,source\n";
}

TEST(GpuCatalogPrecision, BundledCatalogHasTheNewGpusAndTheirNvidiaSmiNames) {
  const GpuCatalog c = load_gpu_catalog(kCatalog);
  const std::pair<const char*, const char*> cases[] = {
      {"NVIDIA A100-PCIE-40GB", "a100-40gb-pcie"}, {"NVIDIA A100 80GB PCIe", "a100-80gb-pcie"},
      {"NVIDIA H100 PCIe", "h100-pcie"},           {"NVIDIA H100 NVL", "h100-nvl"},
      {"NVIDIA A10", "a10"},                       {"NVIDIA A10G", "a10g"},
      {"NVIDIA L40", "l40"},                       {"NVIDIA L40S", "l40s"},
      {"NVIDIA RTX 6000 Ada Generation", "rtx6000-ada"}, {"NVIDIA B200", "b200"},
      {"NVIDIA GH200 480GB", "gh200"}};
  for (auto [name, id] : cases) {
    const auto g = c.match_smi_name(name);
    ASSERT_TRUE(g.has_value()) << name;
    EXPECT_EQ(g->id, id) << name;
  }
  // 0 where a GPU has no tensor path for a precision; no tensor peak below the FP32 rate.
  EXPECT_EQ(c.find("v100")->tensor_bf16_tflops, 0);
  EXPECT_EQ(c.find("p100")->tensor_fp16_tflops, 0);
  EXPECT_DOUBLE_EQ(c.find("a100-80gb")->tensor_tf32_tflops, 156);
  for (const auto& g : c.gpus()) {
    for (double t : {g.tensor_fp16_tflops, g.tensor_tf32_tflops, g.tensor_bf16_tflops})
      if (t > 0) EXPECT_GE(t, g.fp32_tflops) << g.id;
    EXPECT_FALSE(g.form_factor.empty()) << g.id;
  }
}

TEST(GpuCatalogPrecision, TensorBelowFp32IsRefusedWithLineColumnAndField) {
  const std::string row =
      "x,X,X,,Ampere,8.0,108,64,1410,19.5,312,15.6,312,0,9.7,40,HBM2,1555,40,400,SXM4,src\n";
  try {
    (void)load_gpu_catalog_from_string(header() + row, "slip.csv");
    FAIL() << "a TF32 peak below FP32 must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.where().line, 2u);
    EXPECT_EQ(e.where().field, "tensor_tf32_tflops");
    EXPECT_GT(e.where().column, 0u);
  }
  const std::string zero_bw = "x,X,X,,Ampere,8.0,108,64,1410,19.5,312,156,312,0,9.7,40,HBM2,0,40,400,SXM4,src\n";
  try {
    (void)load_gpu_catalog_from_string(header() + zero_bw, "bw.csv");
    FAIL() << "bandwidth 0 must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().field, "memory_bandwidth_gbs");
  }
}

// A missing figure (an empty cell) is refused like a wrong one, naming line, column and field;
// an empty optional precision cell too (absent columns read as unknown, empty cells do not).
TEST(GpuCatalogPrecision, EmptyFiguresAreRefusedWithLineColumnAndField) {
  const std::string ok = "x,X,X,,Ampere,8.0,108,64,1410,19.5,312,156,312,0,9.7,40,HBM2,1555,40,400,SXM4,src\n";
  EXPECT_NO_THROW((void)load_gpu_catalog_from_string(header() + ok, "ok.csv"));
  const std::pair<const char*, const char*> rows[] = {
      {"fp32_tflops", "y,Y,Y,,Ampere,8.0,108,64,1410,,312,156,312,0,9.7,40,HBM2,1555,40,400,SXM4,src\n"},
      {"memory_bandwidth_gbs", "y,Y,Y,,Ampere,8.0,108,64,1410,19.5,312,156,312,0,9.7,40,HBM2, ,40,400,SXM4,src\n"},
      {"tensor_tf32_tflops", "y,Y,Y,,Ampere,8.0,108,64,1410,19.5,312,,312,0,9.7,40,HBM2,1555,40,400,SXM4,src\n"},
      {"tdp_w", "y,Y,Y,,Ampere,8.0,108,64,1410,19.5,312,156,312,0,9.7,40,HBM2,1555,40,-400,SXM4,src\n"},
  };
  for (const auto& [field, row] : rows) {
    try {
      (void)load_gpu_catalog_from_string(header() + ok + row, "gaps.csv");
      ADD_FAILURE() << field << ": an empty or negative figure must be refused";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse) << field;
      EXPECT_EQ(e.where().file, "gaps.csv") << field;
      EXPECT_EQ(e.where().line, 3u) << field;
      EXPECT_EQ(e.where().field, field) << e.what();
      EXPECT_GT(e.where().column, 0u) << field;
    }
  }
}

TEST(GpuCatalogPrecision, OlderCatalogWithoutPrecisionColumnsLoadsAsUnknown) {
  const std::string old =
      "id,name,smi_names,dataset_labels,architecture,compute_capability,sm_count,fp32_cores_per_sm,"
      "max_sm_clock_mhz,fp32_tflops,tensor_fp16_tflops,memory_gib,memory_type,memory_bandwidth_gbs,"
      "l2_cache_mib,tdp_w,source\n"
      "a,A,A,,Ampere,8.0,108,64,1410,19.5,312,40,HBM2,1555,40,400,src\n";
  const GpuCatalog c = load_gpu_catalog_from_string(old, "old.csv");
  EXPECT_TRUE(std::isnan(c.find("a")->tensor_tf32_tflops));
  const ComputePath p = compute_path(Precision::kBf16, *c.find("a"));
  EXPECT_DOUBLE_EQ(p.tflops, 312);  // the FP16 tensor rate, said in a warning
  EXPECT_NE(p.warning.find("tensor_bf16_tflops"), std::string::npos);
}

TEST(GpuCatalogPrecision, UnknownNameSuggestsNearestIds) {
  const GpuCatalog c = load_gpu_catalog(kCatalog);
  const auto near = c.nearest_ids("NVIDIA H100 SXM");
  ASSERT_FALSE(near.empty());
  EXPECT_TRUE(near.front().starts_with("h100")) << near.front();
}

TEST(GpuCatalogPrecision, NearestIdsAreTheFamilyThenTyposAndNothingFar) {
  const GpuCatalog c = load_gpu_catalog(kCatalog);
  // "h100" is one letter from p100, but names the H100 family: all of it, and nothing else.
  const auto h100 = c.nearest_ids("h100");
  ASSERT_EQ(h100.size(), 3u);
  for (const auto& id : h100) EXPECT_TRUE(id.starts_with("h100")) << id;
  EXPECT_EQ(c.nearest_ids("v10").front(), "v100");      // a typo
  EXPECT_TRUE(c.nearest_ids("nope").empty());            // nothing near: no suggestion at all
  EXPECT_TRUE(c.nearest_ids("").empty());
}

TEST(Precision, RulesPerGpuAndUnknownWordListsChoices) {
  const GpuCatalog c = load_gpu_catalog(kCatalog);
  EXPECT_EQ(compute_path(Precision::kAuto, *c.find("a100-80gb")).unit, "TF32 tensor");
  EXPECT_EQ(compute_path(Precision::kAuto, *c.find("v100")).unit, "FP32");  // no TF32 on Volta
  EXPECT_EQ(compute_path(Precision::kFp32, *c.find("a100-80gb")).unit, "FP32");
  const ComputePath bf16_v100 = compute_path(Precision::kBf16, *c.find("v100"));
  EXPECT_DOUBLE_EQ(bf16_v100.tflops, 15.7);
  EXPECT_FALSE(bf16_v100.warning.empty());
  EXPECT_TRUE(compute_path(Precision::kBf16, *c.find("h200")).warning.empty());
  try {
    (void)parse_precision("fp64");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("auto, fp32, tf32, fp16, bf16"), std::string::npos);
  }
}

TEST(PublicThroughput, ReadsTheBundledTableAndCountsUnknownNames) {
  const GpuCatalog c = load_gpu_catalog(kCatalog);
  const PublicTable t = load_public_throughput(kTable, kNames, c);
  EXPECT_EQ(t.rows.size(), 340u);
  EXPECT_EQ(t.rows_skipped(), 0u);
  EXPECT_EQ(t.gpu_ids().size(), 12u);
  // A copy with an unknown machine and an unknown workload: counted and named, not fatal.
  const std::string path = ::testing::TempDir() + "/public_unknown.csv";
  {
    std::ofstream out(path);
    out << "gpu_name,watt,precision,workload,throughput,batch_size,source\n"
        << "RTX 4090,450,amp_fp16,resnet50,1301,448,x\n"
        << "Imaginary GPU 9000,450,amp_fp16,resnet50,10,1,x\n"
        << "RTX 4090,450,amp_fp16,llama_pretrain,10,1,x\n"
        << "RTX 4090,450,int4,resnet50,10,1,x\n";
  }
  const PublicTable u = load_public_throughput(path, kNames, c);
  EXPECT_EQ(u.rows.size(), 1u);
  EXPECT_EQ(u.unknown_gpus.at("Imaginary GPU 9000"), 1u);
  EXPECT_EQ(u.unknown_workloads.at("llama_pretrain"), 1u);
  EXPECT_EQ(u.unknown_precisions.at("int4"), 1u);
  {
    std::ofstream out(path);
    out << "gpu_name,watt,precision,workload,throughput,batch_size,source\n"
        << "RTX 4090,450,amp_fp16,resnet50,fast,448,x\n";
  }
  try {
    (void)load_public_throughput(path, kNames, c);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.where().line, 2u);
    EXPECT_EQ(e.where().field, "throughput");
    EXPECT_GT(e.where().column, 0u);
  }
  std::remove(path.c_str());
}

TEST(ScalingPrior, LeaveOneGpuOutBeatsTheSpecSheetAndFormat5Priors) {
  const GpuCatalog c = load_gpu_catalog(kCatalog);
  const PublicTable t = load_public_throughput(kTable, kNames, c);
  const PublicEvalReport r = evaluate_public(t, c);
  for (const char* family : {"fp16", "tf32"}) {
    const auto& m = r.overall_median_pct.at(family);
    EXPECT_LT(m.at("calibrated"), m.at("spec_sheet")) << family;
    EXPECT_LT(m.at("calibrated"), m.at("format5_prior")) << family;
    // The nested 90 % interval covers about 90 % of the held-out ratios.
    EXPECT_GT(r.overall_coverage_pct.at(family), 85.0) << family;
    EXPECT_LT(r.overall_coverage_pct.at(family), 95.0) << family;
  }
}

// The fixed (launch- and latency-bound) share runs at the SM clock: a GPU that differs only by a
// 1.5x clock takes 1/1.5 of the fixed time, and the memory share does not see the clock.
TEST(ScalingPrior, FixedShareScalesWithTheSmClockOnly) {
  const GpuCatalog c = load_gpu_catalog(kCatalog);
  const GpuSpec& a = *c.find("a100-80gb");
  GpuSpec fast = a;
  fast.max_sm_clock_mhz = 1.5 * a.max_sm_clock_mhz;
  const ScalingParams fixed_only{.compute_exp = 1, .bandwidth_exp = 1, .power_exp = 0, .memory_share = 0, .fixed_share = 1};
  EXPECT_NEAR(busy_level_log(fixed_only, 1.0, a, fast, Precision::kFp16), std::log(1 / 1.5), 1e-12);
  const ScalingParams memory_only{.compute_exp = 1, .bandwidth_exp = 1, .power_exp = 0, .memory_share = 1, .fixed_share = 0};
  EXPECT_NEAR(busy_level_log(memory_only, 1.0, a, fast, Precision::kFp16), 0.0, 1e-12);
}

// Volta and Turing run fp16 on FP16 tensor cores without TF32 ones; only they get the share.
TEST(ScalingPrior, LegacyTensorPathIsPreAmpereFp16Only) {
  const GpuCatalog c = load_gpu_catalog(kCatalog);
  EXPECT_TRUE(legacy_tensor_path(Precision::kFp16, *c.find("v100")));
  EXPECT_TRUE(legacy_tensor_path(Precision::kFp16, *c.find("t4")));
  EXPECT_TRUE(legacy_tensor_path(Precision::kFp16, *c.find("quadro-rtx8000")));
  EXPECT_FALSE(legacy_tensor_path(Precision::kBf16, *c.find("v100")));  // its FP32 units, not tensor cores
  EXPECT_FALSE(legacy_tensor_path(Precision::kTf32, *c.find("v100")));
  EXPECT_FALSE(legacy_tensor_path(Precision::kFp16, *c.find("a100-80gb")));
  EXPECT_FALSE(legacy_tensor_path(Precision::kFp16, *c.find("p100")));  // no tensor cores at all
  // A compute-only job: the V100's tensor peak counts at the share, so half the share doubles
  // its compute time against the A100 (compute_exp 1).
  const GpuSpec &a = *c.find("a100-80gb"), &v = *c.find("v100");
  ScalingParams compute_only{.compute_exp = 1, .bandwidth_exp = 1, .power_exp = 0, .memory_share = 0, .fixed_share = 0};
  const double full = busy_level_log(compute_only, 1.0, a, v, Precision::kFp16);
  compute_only.legacy_tensor_eff = 0.5;
  EXPECT_NEAR(busy_level_log(compute_only, 1.0, a, v, Precision::kFp16) - full, std::log(2.0), 1e-12);
  EXPECT_NEAR(busy_level_log(compute_only, 1.0, a, v, Precision::kTf32),
              busy_level_log(ScalingParams{.compute_exp = 1, .bandwidth_exp = 1, .power_exp = 0, .memory_share = 0,
                                           .fixed_share = 0},
                             1.0, a, v, Precision::kTf32),
              1e-12);
}

// Fitted on the public table, the pre-Ampere share is well inside (floor, 1) for mixed precision
// and fixed at 1 for fp32 code; holding the V100 out still fits it (the Quadro RTX 8000 remains).
TEST(ScalingPrior, LegacyTensorShareIsFittedBelowOne) {
  const GpuCatalog c = load_gpu_catalog(kCatalog);
  const PublicTable t = load_public_throughput(kTable, kNames, c);
  for (const char* held : {"", "v100"}) {
    const ScalingFit f = fit_scaling_prior(t, c, held);
    EXPECT_GT(f.prior.mixed.legacy_tensor_eff, 0.2) << held;
    EXPECT_LT(f.prior.mixed.legacy_tensor_eff, 0.95) << held;
    EXPECT_EQ(f.prior.fp32_code.legacy_tensor_eff, 1.0) << held;
  }
}

// The pair oracle (one constant per GPU pair, read from the truth) is the floor of a
// job-agnostic prior: below the calibrated prior, above zero (workloads differ).
TEST(ScalingPrior, PairOracleAndFloorAreBelowTheCalibratedPrior) {
  const GpuCatalog c = load_gpu_catalog(kCatalog);
  const PublicTable t = load_public_throughput(kTable, kNames, c);
  const PublicEvalReport r = evaluate_public(t, c, false);
  for (const char* family : {"fp16", "tf32"}) {
    const auto& m = r.overall_median_pct.at(family);
    EXPECT_LT(m.at("pair_oracle"), m.at("calibrated")) << family;
    EXPECT_GT(m.at("pair_oracle"), 1.0) << family;
    // The floor is the least median over every choice of one constant per pair: the pair
    // oracle's median constants are one such choice.
    const double floor = r.job_agnostic_floor_pct.at(family);
    EXPECT_LE(floor, m.at("pair_oracle") + 1e-9) << family;
    EXPECT_GT(floor, 1.0) << family;
  }
}

TEST(ScalingPrior, RatiosAreConsistentAndIdleTimeDoesNotScale) {
  const GpuCatalog c = load_gpu_catalog(kCatalog);
  const ScalingPrior& p = calibrated_scaling_prior();
  const GpuSpec &a = *c.find("a100-80gb"), &h = *c.find("h100-sxm"), &v = *c.find("v100");
  const ScalingParams& mixed = p.params(PrecisionClass::kMixed);
  // A faster GPU takes less time; going there and back is the identity.
  const double ah = scaling_log_ratio(mixed, 1.0, p.reference, a, h, Precision::kFp16);
  EXPECT_LT(ah, 0);
  EXPECT_NEAR(ah + scaling_log_ratio(mixed, 1.0, p.reference, h, a, Precision::kFp16), 0.0, 1e-12);
  // Composition through the reference: a->v->h equals a->h at full busy.
  EXPECT_NEAR(scaling_log_ratio(mixed, 1.0, p.reference, a, v, Precision::kFp16) +
                  scaling_log_ratio(mixed, 1.0, p.reference, v, h, Precision::kFp16),
              ah, 1e-12);
  // A GPU busy 10 % of the epoch: at most that share can shrink.
  EXPECT_GT(scaling_log_ratio(mixed, 0.1, p.reference, a, h, Precision::kFp16), std::log(0.9));
  EXPECT_GT(p.mixed.interval_q_log, 0);
  EXPECT_GT(p.fp32_code.interval_q_log, 0);
}

}  // namespace
}  // namespace epochcast
