// Range and timestamp checks of the readings, one sweep each (declared in signal.hpp).
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
// Whether every p[i] is in [lo, hi] (NaN is not): running min and max, and a probe that turns
// NaN on a NaN reading (v - v).
bool all_inside_base(const double* p, std::size_t n, double lo, double hi) {
  V2 vmin = splat(std::numeric_limits<double>::infinity()), vmax = -vmin, probe = splat(0);
  std::size_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const V2 v = load2(p + i);
    vmin = v < vmin ? v : vmin;
    vmax = v > vmax ? v : vmax;
    probe += v - v;
  }
  bool clean = vmin[0] >= lo && vmin[1] >= lo && vmax[0] <= hi && vmax[1] <= hi && !(probe[0] != probe[0]) &&
               !(probe[1] != probe[1]);
  for (; i < n; ++i) clean = clean && p[i] >= lo && p[i] <= hi;
  return clean;
}

}  // namespace

std::size_t count_outside(std::span<const double> x, double lo, double hi) {
  const std::size_t n = x.size();
  const double* p = x.data();
  // Fast: the range check alone; the exact count only when something is outside.
  const bool clean = all_inside_base(p, n, lo, hi);
  if (clean) return 0;
  std::size_t ok = 0;
  for (std::size_t i = 0; i < n; ++i) ok += p[i] >= lo && p[i] <= hi;
  return n - ok;
}

namespace {
// Over t[1, n): the smallest step t[i] - t[i-1], the range of t[i] - i * dt, and a probe that
// turns NaN on any non-finite t (t - t); returns the first index not swept.
struct TimeSweep {
  double step, dmin, dmax, probe;
};
std::size_t time_sweep_base(const double* p, std::size_t n, double dt, TimeSweep& r) {
  const V2 vdt = splat(dt), two = splat(2);
  V2 step = splat(std::numeric_limits<double>::infinity()), dmin = step, dmax = -step, probe = splat(0);
  V2 idx{1, 2};
  std::size_t i = 1;
  for (; i + 2 <= n; i += 2) {
    const V2 cur = load2(p + i), prev = load2(p + i - 1);
    const V2 s = cur - prev, d = cur - idx * vdt;
    step = s < step ? s : step;
    dmin = d < dmin ? d : dmin;
    dmax = d > dmax ? d : dmax;
    probe += cur - cur;
    idx += two;
  }
  // A NaN step or offset is lost by min/max; the probe catches its t.
  r = {std::min(step[0], step[1]), std::min(dmin[0], dmin[1]), std::max(dmax[0], dmax[1]), probe[0] + probe[1]};
  return i;
}
}  // namespace

std::size_t check_timestamps(std::span<const double> t, double dt, double tolerance, bool& on_grid) {
  const std::size_t n = t.size();
  const double* p = t.data();
  // One sweep of min/max: the smallest step (increasing), the grid offsets' range, and a
  // NaN probe. The exact index only on failure.
  TimeSweep r{};
  std::size_t i = time_sweep_base(p, n, dt, r);
  bool all = r.step >= 0 && r.probe == 0 && (n == 0 || std::isfinite(p[0]));
  bool g = r.dmin >= -tolerance && r.dmax <= tolerance && (n == 0 || std::abs(p[0]) <= tolerance);
  for (; i < n; ++i) {
    all = all && std::isfinite(p[i]) && p[i] >= p[i - 1];
    g = g && std::abs(p[i] - static_cast<double>(i) * dt) <= tolerance;
  }
  on_grid = all && g;
  if (all) return n;
  for (std::size_t k = 0; k < n; ++k)
    if (!std::isfinite(p[k]) || (k > 0 && p[k] < p[k - 1])) return k;
  return n;
}

}  // namespace epochcast::signal

#include "fp_contract_off_end.hpp"
