#include "epochcast/collect/metrics_server.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include "epochcast/core/error.hpp"

namespace epochcast {
namespace {

MetricValues sample(double util, double power) {
  MetricValues v = empty_metric_values();
  v[static_cast<std::size_t>(Metric::kGpuUtil)] = util;
  v[static_cast<std::size_t>(Metric::kPower)] = power;
  v[static_cast<std::size_t>(Metric::kEnergy)] = 1234567;
  return v;
}

const std::vector<GpuIdentity> kGpus{{0, "NVIDIA H200", "GPU-aaaa"}, {1, "NVIDIA \"H200\"", "GPU-bbbb"}};

TEST(PrometheusText, DcgmExporterNamesAndLabels) {
  const std::vector<MetricValues> values{sample(97, 312.5), sample(NAN, 80)};
  const std::string text = render_prometheus_metrics(kGpus, values, "node7");
  EXPECT_NE(text.find("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"), std::string::npos) << text;
  EXPECT_NE(text.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-aaaa\",device=\"nvidia0\",modelName=\"NVIDIA "
                      "H200\",Hostname=\"node7\"} 97\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-bbbb\",device=\"nvidia1\",modelName=\"NVIDIA "
                      "\\\"H200\\\"\",Hostname=\"node7\"} 80\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"), std::string::npos);
  // GPU 1's utilisation is NaN: no series, rather than a fake number.
  EXPECT_EQ(text.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"1\""), std::string::npos);
  // One HELP/TYPE pair per metric, not per GPU.
  std::size_t count = 0;
  for (auto pos = text.find("# TYPE DCGM_FI_DEV_POWER_USAGE"); pos != std::string::npos;
       pos = text.find("# TYPE DCGM_FI_DEV_POWER_USAGE", pos + 1))
    ++count;
  EXPECT_EQ(count, 1u);
}

TEST(MetricsServer, ServesTheLatestValuesOverHttp) {
  MetricsServer server("127.0.0.1:0", kGpus);
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(server.url(), "http://127.0.0.1:" + std::to_string(server.port()) + "/metrics");
  server.update(0, sample(42, 100));
  httplib::Client client("127.0.0.1", server.port());
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\""), std::string::npos);
  EXPECT_NE(res->body.find("} 42\n"), std::string::npos) << res->body;
  server.update(0, sample(43, 100));
  server.remove(1);
  res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_NE(res->body.find("} 43\n"), std::string::npos) << res->body;
  EXPECT_EQ(res->body.find("gpu=\"1\""), std::string::npos);
}

TEST(MetricsServer, BadAddressAndBusyPortAreClearErrors) {
  try {
    MetricsServer server("127.0.0.1:notaport", kGpus);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
  MetricsServer first("127.0.0.1:0", kGpus);
  try {
    MetricsServer second("127.0.0.1:" + std::to_string(first.port()), kGpus);
    FAIL() << "binding a busy port must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find(std::to_string(first.port())), std::string::npos);
  }
}

}  // namespace
}  // namespace epochcast

namespace epochcast {
namespace {

}  // namespace
}  // namespace epochcast
