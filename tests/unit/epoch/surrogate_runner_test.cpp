// The nulls on several threads (src/epoch/surrogate_runner.hpp): scores consumed in index order
// whoever computed them, and the detector's answer the same bit for bit on any number of
// helper threads as on one.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "epochcast/epoch/detect.hpp"
#include "eval/chained.hpp"
#include "eval/variants.hpp"
#include "../../../src/epoch/surrogate_runner.hpp"

namespace epochcast {
namespace {

const std::string kDir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";

// Sets the helpers for one scope.
struct Helpers {
  explicit Helpers(std::size_t n) : before(detail::set_max_surrogate_helpers(n)) {}
  ~Helpers() { detail::set_max_surrogate_helpers(before); }
  std::size_t before;
};

TEST(SurrogateRunner, ScoresAreConsumedInOrderUntilTheStop) {
  for (std::size_t helpers : {0, 1, 3}) {
    Helpers h(helpers);
    std::vector<std::size_t> seen;
    std::size_t prepared = 99;
    const std::size_t used = detail::run_ordered(
        50, [&](std::size_t n) { prepared = n; },
        [&](std::size_t worker, std::size_t i) {
          EXPECT_LE(worker, prepared);
          // Uneven costs: later indices often finish first.
          std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 5 * 200));
          return 2.0 * static_cast<double>(i);
        },
        [&](std::size_t i, double score) {
          EXPECT_EQ(score, 2.0 * static_cast<double>(i));
          seen.push_back(i);
          return i < 20;
        });
    EXPECT_EQ(used, prepared);
    EXPECT_EQ(used, helpers) << "an idle machine gives the helpers asked for";
    ASSERT_EQ(seen.size(), 21u) << helpers;
    for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i);
  }
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void expect_same(const Segmentation& a, const Segmentation& b, const std::string& what) {
  EXPECT_EQ(a.found, b.found) << what;
  EXPECT_TRUE(same_bits(a.period_s, b.period_s)) << what << ": " << a.period_s << " vs " << b.period_s;
  EXPECT_TRUE(same_bits(a.confidence, b.confidence)) << what;
  EXPECT_EQ(a.reason, b.reason) << what;
  ASSERT_EQ(a.epochs.size(), b.epochs.size()) << what;
  for (std::size_t i = 0; i < a.epochs.size(); ++i) EXPECT_TRUE(same_bits(a.epochs[i].start_s, b.epochs[i].start_s)) << what;
}

// Every shared trace and a 100-epoch chain (the boundary chain's stage and its nulls): the
// same answer, reason text included (its p-values and surrogate counts), with 0, 1 and 3 helpers.
TEST(SurrogateRunner, SameAnswerOnAnyNumberOfThreads) {
  std::vector<std::pair<std::string, Trace>> traces;
  for (const char* name : {"effnetb0_224_bs64_ckpt_500ms", "lenet5_28_bs64_fp32", "mobilenetv2_224_bs128_noval",
                           "resnet18_32_bs128_cpuloader", "resnet50_224_bs256_bf16", "vgg16_224_bs32_fp32"})
    traces.emplace_back(name, testing::load_real_base(kDir, name).with_host);
  traces.emplace_back("effnetb0 chain", eval::chain_real_epochs(testing::load_real_base(kDir, "effnetb0_224_bs64_ckpt_500ms"),
                                                                {100, 0.02}, 7919ULL * 1 + 100)
                                            .trace);
  for (const auto& [name, trace] : traces) {
    Segmentation one;
    {
      Helpers h(0);
      one = detect_epochs(trace);
    }
    for (std::size_t helpers : {1, 3}) {
      Helpers h(helpers);
      expect_same(detect_epochs(trace), one, name + " with " + std::to_string(helpers) + " helpers");
    }
  }
}

}  // namespace
}  // namespace epochcast
