// The reading step of a quantised channel (declared in signal.hpp).
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

double smallest_step(std::span<const double> readings, std::size_t max_count) {
  // Order-preserving keys: sign bit flipped for positive doubles, all bits for negative ones
  // (-0 sorts before +0; both compare equal, and the differences to their neighbours are the
  // same either way).
  std::vector<std::uint64_t> key, tmp;
  key.reserve(std::min(readings.size(), max_count));
  for (std::size_t i = 0; i < readings.size() && key.size() < max_count; ++i) {
    if (!std::isfinite(readings[i])) continue;
    std::uint64_t u;
    std::memcpy(&u, &readings[i], sizeof u);
    key.push_back(u >> 63 ? ~u : u | (std::uint64_t{1} << 63));
  }
  const std::size_t n = key.size();
  if (n < 2) return 0;
  // LSD radix sort, one byte per pass; a byte that all keys share needs no pass.
  std::vector<std::array<std::uint32_t, 256>> count(8);
  for (auto& c : count) c.fill(0);
  for (const std::uint64_t k : key)
    for (int b = 0; b < 8; ++b) ++count[static_cast<std::size_t>(b)][(k >> (8 * b)) & 0xff];
  tmp.resize(n);
  for (int b = 0; b < 8; ++b) {
    auto& c = count[static_cast<std::size_t>(b)];
    if (c[(key[0] >> (8 * b)) & 0xff] == n) continue;
    std::uint32_t sum = 0;
    for (auto& v : c) {
      const std::uint32_t here = v;
      v = sum;
      sum += here;
    }
    for (const std::uint64_t k : key) tmp[c[(k >> (8 * b)) & 0xff]++] = k;
    key.swap(tmp);
  }
  auto value = [](std::uint64_t k) {
    const std::uint64_t u = k >> 63 ? k & ~(std::uint64_t{1} << 63) : ~k;
    double v;
    std::memcpy(&v, &u, sizeof v);
    return v;
  };
  double step = 0, prev = value(key[0]);
  for (std::size_t i = 1; i < n; ++i) {
    const double cur = value(key[i]);
    const double d = cur - prev;
    if (d > 1e-9 * (std::abs(cur) + 1) && (step == 0 || d < step)) step = d;
    prev = cur;
  }
  return step;
}

}  // namespace epochcast::signal

#include "fp_contract_off_end.hpp"
