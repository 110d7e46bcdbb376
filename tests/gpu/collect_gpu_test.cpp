// The NVML loader and sampler on a real GPU (ctest label gpu). Skips without libnvidia-ml.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>

#include "epochcast/collect/nvml.hpp"
#include "epochcast/collect/sampler.hpp"

namespace epochcast {
namespace {

bool driver_present() {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

TEST(GpuNvml, RealDriverReportsIdentityAndLiveValues) {
  if (!driver_present()) GTEST_SKIP() << "no libnvidia-ml.so.1 (no NVIDIA driver on this machine)";
  unsetenv("EPOCHCAST_NVML_LIBRARY");
  Nvml nvml;
  ASSERT_GE(nvml.device_count(), 1u);
  const GpuIdentity id = nvml.identity(0);
  EXPECT_FALSE(id.name.empty());
  EXPECT_TRUE(id.uuid.starts_with("GPU-")) << id.uuid;
  MetricValues v = empty_metric_values();
  ASSERT_EQ(nvml.read(0, NvmlQuery::kPower, v).status, ReadStatus::kOk);
  EXPECT_GT(v[static_cast<std::size_t>(Metric::kPower)], 1.0);
  ASSERT_EQ(nvml.read(0, NvmlQuery::kMemory, v).status, ReadStatus::kOk);
  EXPECT_GT(v[static_cast<std::size_t>(Metric::kMemTotal)], 1000.0);
  ASSERT_EQ(nvml.read(0, NvmlQuery::kSmClock, v).status, ReadStatus::kOk);
  EXPECT_GT(v[static_cast<std::size_t>(Metric::kSmClock)], 100.0);
}

TEST(GpuNvml, SamplerKeepsA100HzScheduleOnTheRealDriver) {
  if (!driver_present()) GTEST_SKIP() << "no libnvidia-ml.so.1 (no NVIDIA driver on this machine)";
  unsetenv("EPOCHCAST_NVML_LIBRARY");
  Nvml nvml;
  Sampler sampler(nvml, {.interval = std::chrono::milliseconds(10), .duration_s = 2.0, .gpus = {0}});
  std::uint64_t ticks = 0;
  sampler.run({.on_tick = [&](const Tick&) { ++ticks; }});
  EXPECT_EQ(ticks + sampler.stats().missed_ticks, 200u);
  EXPECT_LE(sampler.stats().missed_ticks, 2u);
  EXPECT_EQ(sampler.stats().failed_reads, 0u);
}

}  // namespace
}  // namespace epochcast
