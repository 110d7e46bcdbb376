// Mutated real traces (bytes flipped, cut, duplicated, spliced across formats): every reader
// either returns a trace or throws epochcast::Error — never another exception, crash or hang.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "epochcast/core/error.hpp"
#include "epochcast/trace/read.hpp"
#include "reader_test_kit.hpp"

namespace epochcast {
namespace {

using testing::slurp;

TEST(ReadFuzz, MutatedTracesNeverEscapeAsAnythingButError) {
  const std::string data = EPOCHCAST_TEST_DATA;
  const std::vector<std::string> seeds = {
      slurp(data + "/h200/lenet5_28_bs64_fp32.smi.csv").substr(0, 6000),
      slurp(data + "/h200/lenet5_28_bs64_fp32.host.csv").substr(0, 3000),
      slurp(data + "/dcgmi/two_gpus_100ms.dmon.log").substr(0, 3000),
      "# epochcast-trace v1\n# gpu_index=0 gpu_name=NVIDIA H200 gpu_uuid=GPU-1\n"
      "timestamp,gpu_index,gpu_uuid,gpu_name,gpu_util_pct,power_w\n"
      "2026-11-30T15:22:53.672Z,0,GPU-1,NVIDIA H200,97,312.4\n2026-11-30T15:22:53.772Z,0,GPU-1,NVIDIA H200,,300\n",
  };
  const auto n = testing::fuzz_readers(
      seeds, 1200, 20261130, "fuzz.csv", ",\n []%.-:/NP0x", "9e,.",
      [](int i) {
        ReadOptions o;
        o.lenient = (i % 3) == 0;
        return o;
      },
      [](const Trace&) {});
  // Both outcomes happen: the mutations are neither all harmless nor all fatal.
  EXPECT_GT(n.traces, 100);
  EXPECT_GT(n.errors, 100);
}

}  // namespace
}  // namespace epochcast
