// In-place iterative radix-2 complex FFT for the surrogate nulls (src/epoch/phase_surrogates.hpp).
// Kept in-tree rather than FFTW (Debian's libfftw3-dev): the detector's answers are defined by
// this transform's rounding (bench/region_search_reference.hpp), and a different transform
// changes the last bits of every surrogate; a 512-point transform with the twiddles tabled is
// a few microseconds (docs/journal/detection.md, 2026-12-02 "region search speed").
#pragma once

#include <complex>
#include <cstddef>
#include <vector>

namespace epochcast::fft {

// The twiddle factors of every stage of an n-point transform (n a power of two), made by the
// same recurrence (w *= e^{-+2 pi i / len}) as the untabled loop, so a tabled transform gives
// that loop's values bit for bit; made once and reused by every transform of that size.
class Plan {
 public:
  explicit Plan(std::size_t n);
  [[nodiscard]] std::size_t size() const { return n_; }
  // inverse: e^{+i...} and unscaled (divide by size()).
  void transform(std::vector<std::complex<double>>& a, bool inverse) const;

 private:
  std::size_t n_;
  // Stage len's factors start at offset len / 2 - 1 (len = 2, 4, ..., n): n - 1 in all.
  std::vector<std::complex<double>> forward_, inverse_;
};

// One transform without a plan kept (a.size() a power of two).
void transform(std::vector<std::complex<double>>& a, bool inverse);

}  // namespace epochcast::fft
