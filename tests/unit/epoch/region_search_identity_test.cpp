// The whole-region search (src/epoch/region_search.cpp, region_scan.cpp, phase_surrogates.cpp)
// against the frozen copy of the search it replaced (bench/region_search_reference.hpp): every
// field of the result, doubles bit for bit, on the shared traces, views and null copies of them
// and synthetic runs, under four option sets each (bench/region_search_cases.hpp). Also the
// surrogates alone (epochcast::phase_randomise) against the reference's.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "../../../bench/region_search_cases.hpp"
#include "../../../bench/region_search_reference.hpp"
#include "../../../src/epoch/region_search.hpp"
#include "epochcast/epoch/nulls.hpp"

namespace epochcast {
namespace {

const std::string kDir = std::string(EPOCHCAST_TEST_DATA) + "/h200/";

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

TEST(RegionSearchIdentity, EveryFieldBitForBitOnEveryCase) {
  const auto cases = region_cases::make_cases(kDir, false);
  ASSERT_GE(cases.size(), 150u);
  int found = 0, significant = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto ch = c.spans();
    const auto a = detail::region_search(ch, c.options);
    const auto r = region_reference::region_search(ch, c.options);
    EXPECT_EQ(a.ok, r.ok);
    EXPECT_TRUE(same_bits(a.period_samples, r.period_samples)) << a.period_samples << " vs " << r.period_samples;
    EXPECT_TRUE(same_bits(a.boundaries, r.boundaries));
    EXPECT_EQ(a.inner, r.inner);
    EXPECT_TRUE(same_bits(a.z, r.z)) << a.z << " vs " << r.z;
    EXPECT_TRUE(same_bits(a.p_value, r.p_value));
    EXPECT_TRUE(same_bits(a.p_phase, r.p_phase));
    EXPECT_TRUE(same_bits(a.p_block, r.p_block));
    EXPECT_TRUE(same_bits(a.epochs, r.epochs));
    EXPECT_EQ(a.why, r.why);
    found += r.ok;
    significant += r.ok && r.p_value <= 0.01;
  }
  // The cases reach both ends of the test: significant finds and surrogates as good.
  EXPECT_GT(significant, 10);
  EXPECT_LT(significant, found);
}

TEST(RegionSearchIdentity, SurrogatesBitForBit) {
  const auto cases = region_cases::make_cases(kDir, true);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    for (bool adjust : {true, false}) {
      std::vector<std::vector<double>> a, r;
      phase_randomise(c.spans(), 7, a, adjust);
      region_reference::ref_nulls::phase_randomise(c.spans(), 7, r, adjust);
      ASSERT_EQ(a.size(), r.size());
      for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(same_bits(a[i], r[i])) << "channel " << i;
    }
  }
}

// A NaN in a channel (the grid fills gaps, so not expected) takes the copy-and-select median:
// the same answer as the reference.
TEST(RegionSearchIdentity, NaNChannelSameAsReference) {
  auto cases = region_cases::make_cases(kDir, true);
  ASSERT_FALSE(cases.empty());
  auto c = cases.front();
  c.channels[0][c.channels[0].size() / 2] = std::numeric_limits<double>::quiet_NaN();
  c.options.surrogates = 3;
  c.options.block_surrogates = 3;
  const auto a = detail::region_search(c.spans(), c.options);
  const auto r = region_reference::region_search(c.spans(), c.options);
  EXPECT_EQ(a.why, r.why);
  EXPECT_TRUE(same_bits(a.z, r.z));
}

}  // namespace
}  // namespace epochcast
