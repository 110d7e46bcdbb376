// Issue 23 item 4, formats: every shared trace written in each format the readers accept
// (src/eval/trace_text.hpp: nvidia-smi CSV, canonical CSV, dcgmi dmon, Prometheus exposition,
// query_range JSON, DCGM_FI CSV, W&B, MLflow) and read back with the real readers. Detection on
// the read-back must give the original's period within 2 % or abstain, never another confident
// answer; a run without a signature must give none. Formats without host channels are read with
// the run's host log (`--host`), as a user would.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "epochcast/epoch/detect.hpp"
#include "epochcast/trace/read.hpp"
#include "eval/trace_text.hpp"
#include "eval/variants.hpp"

namespace epochcast {
namespace {

const std::string kDir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";

class FormatInvariance : public ::testing::TestWithParam<const char*> {};

TEST_P(FormatInvariance, EveryFormatSamePeriodOrAbstain) {
  const auto base = testing::load_real_base(kDir, GetParam());
  const auto o = detect_epochs(base.with_host);
  for (const auto& f : eval::text_formats()) {
    const std::string text = eval::write_trace_text(base.with_host, f.format);
    ReadOptions ro;
    if (!f.carries_host) ro.host_path = kDir + base.name + ".host.csv";
    Trace t;
    try {
      t = read_trace_from_string(text, base.name + " as " + f.name, ro);
    } catch (const std::exception& e) {
      ADD_FAILURE() << f.name << ": not read back: " << e.what();
      continue;
    }
    // The read-back is the same run: every sample, and the channels the format carries.
    EXPECT_NEAR(static_cast<double>(t.size()), static_cast<double>(base.with_host.size()), 1) << f.name;
    EXPECT_NE(t.find(Metric::kGpuUtil), nullptr) << f.name;
    EXPECT_NEAR(t.duration_s(), base.with_host.duration_s(), 0.01) << f.name;
    const auto s = detect_epochs(t);
    if (!s.found || s.confidence < 0.5) continue;
    if (!base.truth.validation) {
      ADD_FAILURE() << f.name << ": a period on a run without a signature: " << s.reason;
      continue;
    }
    if (o.found)
      EXPECT_LE(std::abs(s.period_s - o.period_s), 0.02 * o.period_s)
          << f.name << ": " << s.period_s << " s against the original's " << o.period_s << " s | " << s.reason;
    else
      EXPECT_LE(std::abs(s.period_s - base.truth.period_s), 0.05 * base.truth.period_s)
          << f.name << ": the original abstains, truth " << base.truth.period_s << " | " << s.reason;
  }
}

INSTANTIATE_TEST_SUITE_P(H200, FormatInvariance, ::testing::ValuesIn(testing::kRealTraceNames));

// The writers are not trivially agreeable: a format's read-back carries the values written (GPU
// utilisation exactly, power to the printed precision), so a reader that dropped or shifted a
// column would fail here before the detector's answer is compared.
TEST(FormatInvariance, ReadBackValuesAreTheOriginals) {
  const auto base = testing::load_real_base(kDir, "vgg16_224_bs32_fp32");
  for (const auto& f : eval::text_formats()) {
    ReadOptions ro;
    if (!f.carries_host) ro.host_path = kDir + base.name + ".host.csv";
    const Trace t = read_trace_from_string(eval::write_trace_text(base.with_host, f.format), f.name, ro);
    ASSERT_EQ(t.size(), base.with_host.size()) << f.name;
    for (Metric m : {Metric::kGpuUtil, Metric::kPower, Metric::kHostCpuUtil}) {
      const Channel* a = base.with_host.find(m);
      const Channel* b = t.find(m);
      ASSERT_NE(a, nullptr);
      ASSERT_NE(b, nullptr) << f.name << " lost " << info(m).tag;
      std::size_t diff = 0;
      for (std::size_t i = 0; i < t.size(); ++i)
        if (!(std::abs(a->values[i] - b->values[i]) <= 1e-3 * (1 + std::abs(a->values[i]))) &&
            !(std::isnan(a->values[i]) && std::isnan(b->values[i])))
          ++diff;
      EXPECT_EQ(diff, 0u) << f.name << " " << info(m).tag;
    }
  }
}

}  // namespace
}  // namespace epochcast
