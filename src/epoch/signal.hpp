// Private signal helpers of the epoch stage: uniform resampling, gap filling, robust scale,
// averaging pyramid, autocorrelation. All O(n) or O(n * lags); no allocation in inner loops.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace epochcast::signal {

// Values of (time_s, values) on the grid j * dt, j = 0..count-1: linear interpolation between
// neighbours no further apart than 2.5 dt, else the nearest sample within 0.6 dt, else NaN.
std::vector<double> resample_uniform(std::span<const double> time_s, std::span<const double> values,
                                     double dt, std::size_t count);

// Fills NaN runs by linear interpolation (edges by the nearest value). Returns the fraction
// of samples that were NaN; 1.0 (and the vector untouched) when every sample is NaN.
double fill_gaps(std::vector<double>& x);

// q-quantile (0..1) of the values; copies. NaN-free input expected.
double quantile(std::span<const double> x, double q);
double median(std::span<const double> x);
// The same on an evenly strided subsample of at most `max_count` values (robust levels and
// scales of long series; exact for shorter ones).
double quantile_sampled(std::span<const double> x, double q, std::size_t max_count = 16384);

// Moving average with a centred window of `width` samples (edges use the part inside).
std::vector<double> moving_average(std::span<const double> x, std::size_t width);

// Level l+1 = pairwise means of level l (an odd last sample is dropped).
std::vector<double> halve(std::span<const double> x);

// Normalised biased autocorrelation r(k) = sum x_i x_{i+k} / sum x_i^2 for k in [lo, hi]
// (x is expected zero-mean). Entries with k >= x.size() are 0.
void autocorrelation(std::span<const double> x, std::size_t lo, std::size_t hi,
                     std::vector<double>& out);

// Vertex of the parabola through (-1, a), (0, b), (1, c): offset in [-0.5, 0.5].
double parabolic_offset(double a, double b, double c);

}  // namespace epochcast::signal
