// Phase-randomised surrogates of a fixed set of equal-length series, many seeds: the work that
// does not depend on the seed (each series' trend line, its forward transform, its sorted
// residuals and values) is done once in the constructor, so one surrogate costs one inverse
// transform and the two rank mappings per series. The values are those of
// epochcast::phase_randomise (include/epochcast/epoch/nulls.hpp), which is built on this class;
// tests/unit/epoch/region_search_identity_test.cpp compares both with the frozen reference.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fft.hpp"

namespace epochcast::detail {

class PhaseSurrogates {
 public:
  // The series must stay alive and unchanged while the object is used (they are not copied).
  explicit PhaseSurrogates(const std::vector<std::span<const double>>& series, bool amplitude_adjust = true);
  // The surrogate for `seed` into `out` (resized to one vector per series).
  void make(std::uint64_t seed, std::vector<std::vector<double>>& out);

 private:
  struct Series {
    std::span<const double> y;
    double a0 = 0, b = 0;                           // least-squares line over the index
    std::vector<std::complex<double>> spectrum;     // transform of y - line, zero-padded to m
    std::vector<double> sorted_resid, sorted_y;     // amplitude adjustment's targets
  };
  std::vector<Series> series_;
  std::size_t n_ = 0, m_ = 1;
  fft::Plan plan_{1};
  bool amplitude_adjust_;
  // Scratch reused across make() calls.
  std::vector<std::complex<double>> rot_, a_;
  std::vector<std::size_t> order_;
  std::vector<std::uint64_t> keys_, keys_tmp_;
  std::vector<std::size_t> idx_, idx_tmp_;
  std::vector<double> v_;
};

}  // namespace epochcast::detail
