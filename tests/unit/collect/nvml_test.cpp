#include "epochcast/collect/nvml.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "epochcast/core/error.hpp"
#include "epochcast/trace/read.hpp"
#include "fake_env.hpp"

namespace epochcast {
namespace {

using testing::FakeNvmlEnv;
using testing::h200_trace;

double at(const MetricValues& v, Metric m) { return v[static_cast<std::size_t>(m)]; }

TEST(Nvml, MissingLibraryIsADeviceErrorNamingIt) {
  try {
    Nvml nvml("/nonexistent/libnvidia-ml.so.1");
    FAIL() << "loading a missing library must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDevice);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("driver"), std::string::npos) << e.what();
  }
}

TEST(Nvml, LibraryWithoutNvmlSymbolsIsRefused) {
  try {
    Nvml nvml("libm.so.6");
    FAIL() << "a library without nvmlInit must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDevice);
    EXPECT_NE(std::string(e.what()).find("nvmlInit_v2"), std::string::npos) << e.what();
  }
}

TEST(Nvml, DefaultLibraryFollowsTheEnvironment) {
  unsetenv("EPOCHCAST_NVML_LIBRARY");
  EXPECT_EQ(Nvml::default_library(), "libnvidia-ml.so.1");
  FakeNvmlEnv env({});
  EXPECT_EQ(Nvml::default_library(), EPOCHCAST_FAKE_NVML);
}

TEST(Nvml, FakeExportsEveryEntryPointOfTheList) {
  void* handle = dlopen(EPOCHCAST_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  ASSERT_GE(nvml_entry_point_symbols().size(), 15u);
  for (const char* symbol : nvml_entry_point_symbols()) EXPECT_NE(dlsym(handle, symbol), nullptr) << symbol;
  dlclose(handle);
}

TEST(Nvml, InitFailureCarriesTheDriverMessage) {
  FakeNvmlEnv env({{"EPOCHCAST_FAKE_NVML_INIT_ERROR", "9"}});
  try {
    Nvml nvml;
    FAIL() << "nvmlInit failing must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDevice);
    EXPECT_NE(std::string(e.what()).find("DRIVER_NOT_LOADED"), std::string::npos) << e.what();
  }
}

TEST(Nvml, ReadsTheReplayedTraceInCanonicalUnits) {
  // Speed ~0 holds the replay at the first sample.
  FakeNvmlEnv env({{"EPOCHCAST_FAKE_NVML_SPEED", "0.000001"}});
  const Trace trace = read_trace(h200_trace());
  Nvml nvml;
  ASSERT_EQ(nvml.device_count(), 1u);
  const GpuIdentity id = nvml.identity(0);
  EXPECT_EQ(id.name, "NVIDIA H200");
  EXPECT_EQ(id.index, 0);
  EXPECT_TRUE(id.uuid.starts_with("GPU-")) << id.uuid;

  MetricValues v = empty_metric_values();
  EXPECT_EQ(nvml.read(0, NvmlQuery::kPower, v).status, ReadStatus::kOk);
  EXPECT_NEAR(at(v, Metric::kPower), trace.find(Metric::kPower)->values[0], 0.001);  // mW -> W
  EXPECT_EQ(nvml.read(0, NvmlQuery::kMemory, v).status, ReadStatus::kOk);
  EXPECT_NEAR(at(v, Metric::kMemTotal), 143771, 0.01);  // bytes -> MiB
  EXPECT_NEAR(at(v, Metric::kMemUsed), trace.find(Metric::kMemUsed)->values[0], 0.01);
  EXPECT_EQ(nvml.read(0, NvmlQuery::kSmClock, v).status, ReadStatus::kOk);
  EXPECT_EQ(at(v, Metric::kSmClock), 1980);
  EXPECT_EQ(nvml.read(0, NvmlQuery::kMemClock, v).status, ReadStatus::kOk);
  EXPECT_EQ(at(v, Metric::kMemClock), 3201);
  EXPECT_EQ(nvml.read(0, NvmlQuery::kUtilization, v).status, ReadStatus::kOk);
  EXPECT_EQ(at(v, Metric::kGpuUtil), trace.find(Metric::kGpuUtil)->values[0]);
  EXPECT_EQ(nvml.read(0, NvmlQuery::kTemperature, v).status, ReadStatus::kOk);
  EXPECT_EQ(at(v, Metric::kTemperature), 47);
  // The smi trace has no PCIe throughput column: the fake answers like a driver without it.
  EXPECT_EQ(nvml.read(0, NvmlQuery::kPcieTx, v).status, ReadStatus::kNotSupported);
}

TEST(Nvml, BadGpuIndexIsNotFound) {
  FakeNvmlEnv env({});
  Nvml nvml;
  try {
    (void)nvml.identity(3);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("GPU 3"), std::string::npos);
  }
  MetricValues v = empty_metric_values();
  EXPECT_EQ(nvml.read(7, NvmlQuery::kPower, v).status, ReadStatus::kFailed);
}

TEST(Nvml, NotSupportedAndLostAreTypedStates) {
  FakeNvmlEnv env({{"EPOCHCAST_FAKE_NVML_NOT_SUPPORTED", "power_w"}, {"EPOCHCAST_FAKE_NVML_LOST_AFTER_S", "0.2"}});
  Nvml nvml;
  MetricValues v = empty_metric_values();
  const ReadResult r = nvml.read(0, NvmlQuery::kPower, v);
  EXPECT_EQ(r.status, ReadStatus::kNotSupported);
  EXPECT_TRUE(std::isnan(at(v, Metric::kPower)));
  EXPECT_EQ(nvml.read(0, NvmlQuery::kSmClock, v).status, ReadStatus::kOk);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  const ReadResult lost = nvml.read(0, NvmlQuery::kSmClock, v);
  EXPECT_EQ(lost.status, ReadStatus::kGpuLost);
  EXPECT_NE(nvml.error_string(lost.nvml_code).find("lost"), std::string::npos);
}

}  // namespace
}  // namespace epochcast
