// Moving averages and their subtraction (declared in signal.hpp).
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

std::vector<double> moving_average(std::span<const double> x, std::size_t width) {
  const std::size_t n = x.size();
  std::vector<double> out(n);
  if (n == 0) return out;
  width = std::max<std::size_t>(1, width);
  const std::size_t left = (width - 1) / 2;
  const std::size_t right = width - 1 - left;
  std::vector<double> prefix(n + 1, 0.0);
  for (std::size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + x[i];
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t a = i >= left ? i - left : 0;
    const std::size_t b = std::min(n, i + right + 1);
    out[i] = (prefix[b] - prefix[a]) / static_cast<double>(b - a);
  }
  return out;
}

void prefix_sums(std::span<const double> x, Buffer& prefix) {
  const std::size_t n = x.size();
  prefix.resize(n + 1);
  prefix[0] = 0;
  double* P = prefix.data() + 1;
  const double* p = x.data();
  // Four interleaved chains over four quarters (one chain is bound by the latency of its
  // additions), then each quarter shifted by the totals before it.
  const std::size_t q = n / 4;
  double c0 = 0, c1 = 0, c2 = 0, c3 = 0;
  for (std::size_t i = 0; i < q; ++i) {
    c0 += p[i];
    c1 += p[q + i];
    c2 += p[2 * q + i];
    c3 += p[3 * q + i];
    P[i] = c0;
    P[q + i] = c1;
    P[2 * q + i] = c2;
    P[3 * q + i] = c3;
  }
  for (std::size_t i = 4 * q; i < n; ++i) {
    c3 += p[i];
    P[i] = c3;
  }
  const double o1 = c0, o2 = o1 + c1, o3 = o2 + c2;
  for (std::size_t i = q; i < 2 * q; ++i) P[i] += o1;
  for (std::size_t i = 2 * q; i < 3 * q; ++i) P[i] += o2;
  for (std::size_t i = 3 * q; i < n; ++i) P[i] += o3;
}

void subtract_moving_average(std::span<double> x, std::size_t width) {
  const std::size_t n = x.size();
  if (n == 0) return;
  width = std::max<std::size_t>(1, width);
  const std::size_t left = (width - 1) / 2;
  const std::size_t right = width - 1 - left;
  Buffer prefix;
  prefix_sums(x, prefix);
  const double inv = 1.0 / static_cast<double>(width);
  const double* S = prefix.data();
  double* o = x.data();
  // Interior (the whole window inside): no branches.
  const std::size_t first = std::min(n, left), last = n >= right ? n - right : 0;
  for (std::size_t i = first; i < last; ++i) o[i] -= (S[i + right + 1] - S[i - left]) * inv;
  auto edge = [&](std::size_t i) {
    const std::size_t a = i >= left ? i - left : 0;
    const std::size_t b = std::min(n, i + right + 1);
    o[i] -= (S[b] - S[a]) / static_cast<double>(b - a);
  };
  for (std::size_t i = 0; i < first; ++i) edge(i);
  for (std::size_t i = std::max(first, last); i < n; ++i) edge(i);
}

void add_scalar(std::span<double> x, double v) {
  for (double& e : x) e += v;
}

}  // namespace epochcast::signal

#include "fp_contract_off_end.hpp"
