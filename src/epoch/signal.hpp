// Private signal helpers of the epoch stage: uniform resampling, gap filling, robust scale,
// averaging pyramid, autocorrelation. All O(n) or O(n * lags); no allocation in inner loops.
// Defined one concept per file: signal_checks.cpp (range and timestamp checks), resample.cpp
// (resampling, gap filling), robust_sample.cpp (quantiles, block subsamples, line sums),
// zscore_sweep.cpp (the z-score pyramid, halving), smoothing.cpp (moving averages),
// autocorrelation.cpp (ACF sweeps, parabolic offset), busy_runs.cpp, reading_step.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <utility>
#include <span>
#include <vector>

namespace epochcast::signal {

// The hot kernels (z-score sweep, ACF lag sweeps, range / timestamp checks, busy runs,
// halving) are written once, two doubles per operation (GCC/Clang vector extension), for the
// baseline target. Hand-written AVX2 / AVX-512 copies were removed (2026-12-02): on the 24 h
// 10 Hz trace they saved 3-5 ms of detection CPU in a predict of ~1-2 s (docs/detection.md).

// Allocator whose resize() leaves doubles uninitialised: the long working arrays are written
// once in full right after sizing, and zero-filling them first is another pass over memory.
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  using std::allocator<T>::allocator;
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using Buffer = std::vector<double, DefaultInitAllocator<double>>;

// Number of values outside [lo, hi] or not finite (NaN fails both comparisons).
std::size_t count_outside(std::span<const double> x, double lo, double hi);

// Sum of y_i and of i * y_i (for a least-squares line), with independent partial sums.
void line_sums(std::span<const double> y, double& sum, double& sum_iy);

// Level l's index ranges [first, second) to store, for levels 0-3.
using PyramidStore = std::array<std::pair<std::size_t, std::size_t>, 4>;

// Levels 0-4 of a z-score pyramid in one sweep: level 0 is
// z[i] = clamp((y[i] - base - slope * (first + i)) * inv, -clip, clip), level l+1[k] =
// (level l[2k] + level l[2k+1]) / 2. Levels 0-3 are stored only over `want[l]` (rounded out
// to whole 16-sample blocks): out[l][k] is level l's value at index out_first[l] + k. Level 4
// (n / 16 values) is written whole to `level4` when given. The long levels are mostly read in
// one centred window, and writing them whole was the cost of this sweep.
// With `level4` and `level5`, level 5 (as halve() makes it from level 4) in the same sweep.
// Returns how many y[i] are outside [valid_lo, valid_hi] or NaN (checked in the same sweep).
std::size_t affine_clip_pyramid(std::span<const double> y, std::size_t first, double base, double slope, double inv,
                                double clip, double valid_lo, double valid_hi, const PyramidStore& want,
                                std::array<Buffer, 4>& out, std::array<std::size_t, 4>& out_first, Buffer* level4,
                                Buffer* level5 = nullptr);
// The same with levels 0-3 stored whole (out[l].size() == y.size() >> l).
std::size_t affine_clip_pyramid(std::span<const double> y, double base, double slope, double inv, double clip,
                                double valid_lo, double valid_hi, std::array<Buffer, 4>& out);

// Values of (time_s, values) on the grid j * dt, j = 0..count-1: linear interpolation between
// neighbours no further apart than 2.5 dt, else the nearest sample within 0.6 dt, else NaN.
std::vector<double> resample_uniform(std::span<const double> time_s, std::span<const double> values,
                                     double dt, std::size_t count);

// Fills NaN runs by linear interpolation (edges by the nearest value). Returns the fraction
// of samples that were NaN; 1.0 (and the vector untouched) when every sample is NaN.
double fill_gaps(std::vector<double>& x);

// Subsample of a long series for robust levels and scales (quantiles, line fits, medians of
// differences): all of a series of at most `max_count` values (blocks = 1, block = n), else
// max_count / 16 blocks of 16 consecutive values, block j starting at
// floor(j * (n - 16) / (blocks - 1)): spread evenly from the first sample to the last. A
// strided subsample cost one cache miss per value (16,384 per channel); a block of 16 shares
// two or three cache lines.
struct SampleLayout {
  std::size_t blocks = 0, block = 0, n = 0;
  // Block starts, filled by sample_layout() without a division each (a 64-bit division per
  // block, five uses per block and channel, was ~2 % of a 24 h detection).
  std::vector<std::size_t> starts;
  [[nodiscard]] std::size_t size() const { return blocks * block; }
  [[nodiscard]] std::size_t start(std::size_t j) const {
    if (j < starts.size()) return starts[j];
    return blocks > 1 ? j * (n - block) / (blocks - 1) : 0;
  }
  [[nodiscard]] std::size_t index(std::size_t k) const { return start(k / block) + k % block; }
};
SampleLayout sample_layout(std::size_t n, std::size_t max_count = 16384);
// x at the layout's indices, in order.
void gather(std::span<const double> x, const SampleLayout& layout, std::vector<double>& out);
// Least-squares sums over a gathered block subsample (`sample`, blocks of layout.block): block j's
// value t has the centred index x = (start(j) + tm - im) - tm, then + 1 per value as a running
// sum (tm = (block - 1) / 2). `sy` and `sxy` are four partial sums by t mod 4, each in block
// order, added as (0 + 1) + (2 + 3); `sxx` gets block * d_j^2 added in block order.
void block_line_sums(std::span<const double> sample, const SampleLayout& layout, double im, double& sy, double& sxy,
                     double& sxx);

// x[k] -= intercept + slope * i for the layout's sample index i of each x[k] (x = gather()'s
// output), and x[k] = |x[k] - m|: the z-score step's residuals and absolute deviations, two
// values per operation (scalar loops were 3 % of a 24 h detection). Same values as the loops.
void subtract_line(std::span<double> x, const SampleLayout& layout, double intercept, double slope);
void abs_deviation(std::span<double> x, double m);

// q-quantile (0..1) of the values; copies. NaN-free input expected.
double quantile(std::span<const double> x, double q);
double median(std::span<const double> x);
// The same on the sample_layout() subsample of at most `max_count` values (robust levels and
// scales of long series; exact for shorter ones).
double quantile_sampled(std::span<const double> x, double q, std::size_t max_count = 16384);

// Moving average with a centred window of `width` samples (edges use the part inside).
std::vector<double> moving_average(std::span<const double> x, std::size_t width);

// Level l+1 = pairwise means of level l (an odd last sample is dropped).
Buffer halve(std::span<const double> x);

// x[i] -= centred moving average of `width` samples (edges use the part inside), in place.
void subtract_moving_average(std::span<double> x, std::size_t width);
// prefix[0] = 0, prefix[i + 1] = x[0] + ... + x[i], summed in four interleaved chains: one fixed
// order of rounding, shared by both moving-average users.
void prefix_sums(std::span<const double> x, Buffer& prefix);

// Sum with independent partial sums. Inline: the flicker profile sums thousands of runs of
// ~20 values, each a call and a mispredicted loop exit when out of line.
inline double sum(std::span<const double> x) {
  using V2 = double __attribute__((vector_size(16)));
  const std::size_t n = x.size();
  const double* p = x.data();
  auto load2 = [](const double* q) {
    V2 v;
    std::memcpy(&v, q, sizeof v);
    return v;
  };
  V2 s0{0, 0}, s1{0, 0};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += load2(p + i);
    s1 += load2(p + i + 2);
  }
  const V2 t = s0 + s1;
  double s = t[0] + t[1];
  for (; i < n; ++i) s += p[i];
  return s;
}

void add_scalar(std::span<double> x, double v);

// Index of the first timestamp that is not finite or smaller than its predecessor (size() if
// none), and in the same sweep whether every t[i] is within `tolerance` of i * dt.
std::size_t check_timestamps(std::span<const double> t, double dt, double tolerance, bool& on_grid);

// Normalised biased autocorrelation r(k) = sum x_i x_{i+k} / sum x_i^2 for k in [lo, hi]
// (x is expected zero-mean). Entries with k >= x.size() are 0.
void autocorrelation(std::span<const double> x, std::size_t lo, std::size_t hi,
                     std::vector<double>& out);

// autocorrelation() of x after subtracting its centred moving average of `width` samples
// (0: none) and then its mean, without changing x (`work` holds the result of the two).
void centred_autocorrelation(std::span<const double> x, std::size_t width, std::size_t lo, std::size_t hi,
                             Buffer& work, std::vector<double>& out);

// Runs [begin, end) of samples whose centred 3-sample mean (2 at the edges; the value itself
// when n == 1) is above `threshold`, computed as (a[i-1] + a[i] + a[i+1]) / 3.0 > threshold.
std::vector<std::pair<std::size_t, std::size_t>> runs_above(std::span<const double> a, double threshold);
// The same, and in the same sweep whether every a[i] is inside [lo, hi] (NaN is not): the
// activity channel's range check, without a pass of its own. The runs are meaningless when not.
std::vector<std::pair<std::size_t, std::size_t>> runs_above(std::span<const double> a, double threshold, double lo,
                                                            double hi, bool& inside);

// Reading step of a quantised channel: the smallest difference d between distinct values
// among the first `max_count` finite readings with d > 1e-9 (|upper value| + 1); 0 if none.
// A radix sort (bytes that all keys share are skipped): the flicker check's 4,096-value sorts were
// 5 % of a detection.
double smallest_step(std::span<const double> readings, std::size_t max_count = 4096);

// Vertex of the parabola through (-1, a), (0, b), (1, c): offset in [-0.5, 0.5].
double parabolic_offset(double a, double b, double c);

}  // namespace epochcast::signal
