#include "sort_finite.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace epochcast::detail {
namespace {

// Below this many values std::sort is as fast and needs no buffers.
constexpr std::size_t kRadixMinValues = 4096;
constexpr int kDigitBits = 8;  // 256 buckets: every scatter stream stays in cache (16 bits was slower than std::sort)
constexpr std::size_t kBuckets = std::size_t{1} << kDigitBits;
// Whole-number channels spanning fewer values than this are counted, not sorted (a 256 KiB table).
constexpr std::size_t kCountingRange = std::size_t{1} << 16;

// Order-preserving map of a double's bits to an unsigned key (negatives flipped whole,
// positives with the sign bit set), and back.
std::uint64_t key_of(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, 8);
  return (b >> 63) ? ~b : b | (std::uint64_t{1} << 63);
}
double value_of(std::uint64_t k) {
  const std::uint64_t b = (k >> 63) ? k & ~(std::uint64_t{1} << 63) : ~k;
  double v;
  std::memcpy(&v, &b, 8);
  return v;
}

}  // namespace

void sort_finite(std::span<const double> samples, std::vector<double>& out) {
  out.clear();
  if (samples.size() < kRadixMinValues) {
    for (double x : samples)
      if (std::isfinite(x)) out.push_back(x);
    std::sort(out.begin(), out.end());
    return;
  }
  // One pass: the finite values, their range, and whether all are whole numbers.
  out.reserve(samples.size());
  double lo = INFINITY, hi = -INFINITY;
  bool whole = true;
  for (double x : samples)
    if (std::isfinite(x)) {
      out.push_back(x);
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      // Whole and within ±2^52 (the cast is exact there; std::floor is a libm call at -O2).
      whole &= std::abs(x) < 0x1p52 && x == static_cast<double>(static_cast<std::int64_t>(x));
    }
  const std::size_t n = out.size();
  if (n == 0) return;
  if (whole && hi - lo < static_cast<double>(kCountingRange)) {
    // Whole numbers in a short range (utilisation, clocks, memory, temperature): count each
    // value and write them back in order. -0.0 keeps its place before 0.0 only if it is the
    // minimum's bit pattern; readers store 0, so it is not met, and == treats them alike.
    std::vector<std::uint32_t> count(static_cast<std::size_t>(hi - lo) + 1);
    bool negative_zero = false;
    for (double x : out) {
      ++count[static_cast<std::size_t>(x - lo)];
      negative_zero |= x == 0 && std::signbit(x);
    }
    if (!negative_zero) {
      std::size_t at = 0;
      for (std::size_t v = 0; v < count.size(); ++v)
        for (std::uint32_t c = count[v]; c > 0; --c) out[at++] = lo + static_cast<double>(v);
      return;
    }
  }
  std::vector<std::uint64_t> keys(n), spare(n);
  std::uint64_t all_and = ~std::uint64_t{0}, all_or = 0;
  for (std::size_t i = 0; i < n; ++i) {
    keys[i] = key_of(out[i]);  // -0 keys just below +0: an order std::sort may give
    all_and &= keys[i];
    all_or |= keys[i];
  }
  // Only the digits that differ between values move anything.
  constexpr int kPasses = 64 / kDigitBits;
  std::vector<std::uint32_t> count(kPasses * kBuckets);
  int varying[kPasses];
  int n_varying = 0;
  for (int d = 0; d < kPasses; ++d)
    if (((all_and ^ all_or) >> (d * kDigitBits)) & (kBuckets - 1)) varying[n_varying++] = d;
  for (std::uint64_t k : keys)
    for (int j = 0; j < n_varying; ++j) {
      const int d = varying[j];
      ++count[d * kBuckets + ((k >> (d * kDigitBits)) & (kBuckets - 1))];
    }
  for (int j = 0; j < n_varying; ++j) {
    const int d = varying[j], shift = d * kDigitBits;
    std::uint32_t* c = count.data() + d * kBuckets;
    std::uint32_t sum = 0;
    for (std::size_t b = 0; b < kBuckets; ++b) {
      const std::uint32_t here = c[b];
      c[b] = sum;
      sum += here;
    }
    for (std::uint64_t k : keys) spare[c[(k >> shift) & (kBuckets - 1)]++] = k;
    keys.swap(spare);
  }
  for (std::size_t i = 0; i < n; ++i) out[i] = value_of(keys[i]);
}

}  // namespace epochcast::detail
