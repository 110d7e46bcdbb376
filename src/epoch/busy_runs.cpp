// Busy runs above a threshold, with the activity channel's range check in the same sweep (declared in signal.hpp).
#include "signal.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

// No fused multiply-add in this file (why: fp_contract_off_begin.hpp).
#include "fp_contract_off_begin.hpp"

#include "signal_vec.hpp"

namespace epochcast::signal {
using namespace vec;

namespace {
// Running range check of the busy sweep (see all_inside_base): min, max, NaN probe.
struct RangeCheck {
  double vmin = std::numeric_limits<double>::infinity(), vmax = -std::numeric_limits<double>::infinity(), probe = 0;
  void add(double v) {
    vmin = std::min(vmin, v);
    vmax = std::max(vmax, v);
    probe += v - v;
  }
  [[nodiscard]] bool inside(double lo, double hi) const { return vmin >= lo && vmax <= hi && probe == probe; }
};

// Interior busy bits, 64 to a word: bit i set when (p[i-1] + p[i]) + p[i+1] >= cut, 0 < i < n-1.
// With kCheck, every interior p[i] also goes into `rc`.
template <bool kCheck>
void busy_bits_base(const double* p, std::size_t n, double cut, std::uint64_t* bits, std::size_t words, RangeCheck& rc) {
#if defined(__SSE2__)
  V2 vmin = splat(rc.vmin), vmax = splat(rc.vmax), probe = splat(0);
#endif
  for (std::size_t w = 0; w < words; ++w) {
    const std::size_t lo = std::max<std::size_t>(1, w * 64), hi = std::min(n - 1, w * 64 + 64);
    std::uint64_t word = 0;
    std::size_t i = lo;
    auto one = [&](std::size_t j) {
      if constexpr (kCheck) rc.add(p[j]);
      word |= static_cast<std::uint64_t>((p[j - 1] + p[j]) + p[j + 1] >= cut) << (j % 64);
    };
#if defined(__SSE2__)
    // Two samples per compare, their bits taken with movmskpd (same sums, same order).
    if (i % 2 != 0 && i < hi) one(i++);
    const V2 vcut = splat(cut);
    for (; i + 2 <= hi; i += 2) {
      const V2 mid = load2(p + i);
      if constexpr (kCheck) {
        vmin = mid < vmin ? mid : vmin;
        vmax = mid > vmax ? mid : vmax;
        probe += mid - mid;
      }
      const V2 sum3 = (load2(p + i - 1) + mid) + load2(p + i + 1);
      const auto mask = static_cast<unsigned>(__builtin_ia32_movmskpd(sum3 >= vcut ? splat(-1.0) : splat(0.0)));
      word |= static_cast<std::uint64_t>(mask) << (i % 64);
    }
#endif
    for (; i < hi; ++i) one(i);
    bits[w] = word;
  }
#if defined(__SSE2__)
  if constexpr (kCheck)
    for (int j = 0; j < 2; ++j) rc.vmin = std::min(rc.vmin, vmin[j]), rc.vmax = std::max(rc.vmax, vmax[j]), rc.probe += probe[j];
#endif
}
}  // namespace

namespace {
std::vector<std::pair<std::size_t, std::size_t>> runs_above_impl(std::span<const double> a, double threshold,
                                                                 RangeCheck* check) {
  const std::size_t n = a.size();
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  if (n == 0) return runs;
  RangeCheck unused;
  RangeCheck& rc = check ? *check : unused;
  // Busy bits, 64 to a word. The interior test (a[i-1] + a[i] + a[i+1]) / 3 > threshold is
  // made without the division: x / 3 rounds monotonically in x, so it holds exactly for
  // x >= cut, the smallest double for which it holds.
  std::vector<std::uint64_t> bits((n + 63) / 64, 0);
  auto set = [&](std::size_t i, bool v) { bits[i / 64] |= static_cast<std::uint64_t>(v) << (i % 64); };
  double cut = 3.0 * threshold;
  const bool exact_cut = std::isfinite(threshold) && std::isfinite(cut);
  if (exact_cut) {
    while (cut / 3.0 > threshold) cut = std::nextafter(cut, -std::numeric_limits<double>::infinity());
    while (!(cut / 3.0 > threshold)) cut = std::nextafter(cut, std::numeric_limits<double>::infinity());
  }
  const double* p = a.data();
  if (exact_cut) {
    auto sweep = [&]<bool kCheck>() {
      busy_bits_base<kCheck>(p, n, cut, bits.data(), bits.size(), rc);
    };
    if (check) {
      sweep.template operator()<true>();
    } else {
      sweep.template operator()<false>();
    }
  } else {
    for (std::size_t i = 1; i + 1 < n; ++i) set(i, (p[i - 1] + p[i] + p[i + 1]) / 3.0 > threshold);
    if (check)
      for (std::size_t i = 1; i + 1 < n; ++i) rc.add(p[i]);
  }
  if (check) {
    rc.add(p[0]);
    rc.add(p[n - 1]);
  }
  if (n >= 2) {
    set(0, (p[0] + p[1]) / 2.0 > threshold);
    set(n - 1, (p[n - 2] + p[n - 1]) / 2.0 > threshold);
  } else {
    set(0, p[0] > threshold);
  }
  // First index >= from whose bit is `value` (n if none): whole words skipped at a time.
  auto next = [&](std::size_t from, bool value) {
    const std::uint64_t flip = value ? 0 : ~std::uint64_t{0};
    std::size_t w = from / 64;
    if (w >= bits.size()) return n;
    std::uint64_t x = (bits[w] ^ flip) & (~std::uint64_t{0} << (from % 64));
    while (x == 0) {
      if (++w >= bits.size()) return n;
      x = bits[w] ^ flip;
    }
    return std::min(n, w * 64 + static_cast<std::size_t>(__builtin_ctzll(x)));
  };
  for (std::size_t i = next(0, true); i < n;) {
    const std::size_t e = next(i, false);
    runs.emplace_back(i, e);
    i = next(e, true);
  }
  return runs;
}
}  // namespace

std::vector<std::pair<std::size_t, std::size_t>> runs_above(std::span<const double> a, double threshold) {
  return runs_above_impl(a, threshold, nullptr);
}

std::vector<std::pair<std::size_t, std::size_t>> runs_above(std::span<const double> a, double threshold, double lo,
                                                            double hi, bool& inside) {
  RangeCheck rc;
  auto runs = runs_above_impl(a, threshold, &rc);
  inside = rc.inside(lo, hi);
  return runs;
}

}  // namespace epochcast::signal

#include "fp_contract_off_end.hpp"
