// describe()'s sort: the same sequence as std::sort on the finite values, whatever the shape
// (duplicates, negatives, infinities and NaN dropped, constant channels, the radix threshold).
#include "../../../src/features/sort_finite.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace epochcast::detail {
namespace {

std::vector<double> reference(const std::vector<double>& in) {
  std::vector<double> v;
  for (double x : in)
    if (std::isfinite(x)) v.push_back(x);
  std::sort(v.begin(), v.end());
  return v;
}

void expect_same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)), 0);
}

TEST(SortFinite, EqualsStdSortOnEveryShape) {
  std::mt19937_64 rng(23);
  std::normal_distribution<double> noise(0, 1);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (std::size_t n : {0, 1, 7, 4095, 4096, 4097, 100000}) {
    std::vector<std::vector<double>> shapes(5, std::vector<double>(n));
    for (std::size_t i = 0; i < n; ++i) {
      shapes[0][i] = 640 + 10 * noise(rng);                             // power, every value distinct
      shapes[1][i] = std::round(std::abs(99 * noise(rng)));             // utilisation: integers, repeats
      shapes[2][i] = 1980;                                               // a constant clock
      shapes[3][i] = i % 97 == 0 ? std::nan("") : i % 89 == 0 ? -kInf : 1e300 * noise(rng);  // wide, signed
      shapes[4][i] = (i % 2 ? -1 : 1) * std::ldexp(1.0, static_cast<int>(rng() % 2000) - 1000);  // every exponent
    }
    for (const auto& s : shapes) {
      std::vector<double> got;
      sort_finite(s, got);
      expect_same_bits(got, reference(s));
    }
  }
}

}  // namespace
}  // namespace epochcast::detail
