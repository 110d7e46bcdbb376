// Mutated real traces (bytes flipped, cut, duplicated, spliced across formats): every reader
// either returns a trace or throws epochcast::Error — never another exception, crash or hang.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "epochcast/core/error.hpp"
#include "epochcast/trace/read.hpp"

namespace epochcast {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string mutate(std::string s, std::mt19937& rng) {
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const std::size_t at = rng() % s.size();
    switch (rng() % 6) {
      case 0: s[at] = static_cast<char>(rng() % 256); break;                       // any byte
      case 1: s[at] = ",\n []%.-:/NP0x"[rng() % 14]; break;                         // a delimiter
      case 2: s.erase(at, rng() % 64); break;                                        // a cut
      case 3: s.insert(at, s.substr(rng() % s.size(), rng() % 128)); break;         // a splice
      case 4: s.resize(at); break;                                                   // truncation
      case 5: s.insert(at, std::string(1 + rng() % 40, "9e,."[rng() % 4])); break;  // number-ish runs
    }
  }
  return s;
}

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
  std::mt19937 rng(20261130);
  int ok = 0, errors = 0;
  for (int i = 0; i < 1200; ++i) {
    const std::string input = mutate(seeds[i % seeds.size()], rng);
    ReadOptions o;
    o.lenient = (i % 3) == 0;
    try {
      const Trace t = read_trace_from_string(input, "fuzz.csv", o);
      ++ok;
      for (const Channel& c : t.channels) ASSERT_EQ(c.values.size(), t.size());
      for (std::size_t k = 1; k < t.size(); ++k) ASSERT_GE(t.time_s[k], t.time_s[k - 1]);
    } catch (const Error& e) {
      ++errors;
      ASSERT_FALSE(std::string(e.what()).empty());
      if (e.code() == ErrorCode::kParse) ASSERT_GE(e.where().line, 1u) << e.what();
    }
  }
  // Both outcomes happen: the mutations are neither all harmless nor all fatal.
  EXPECT_GT(ok, 100);
  EXPECT_GT(errors, 100);
}

}  // namespace
}  // namespace epochcast
