// Radix-2 FFT. The operation order is the one the detector's nulls were defined with
// (bench/region_search_reference.hpp): do not reorder the butterflies or the twiddle recurrence.
#include "fft.hpp"

#include <cmath>
#include <utility>

namespace epochcast::fft {

Plan::Plan(std::size_t n) : n_(n) {
  using cd = std::complex<double>;
  forward_.reserve(n);
  inverse_.reserve(n);
  for (std::size_t len = 2; len <= n; len <<= 1)
    for (bool inverse : {false, true}) {
      const double ang = 2 * M_PI / static_cast<double>(len) * (inverse ? 1 : -1);
      const cd wl(std::cos(ang), std::sin(ang));
      auto& table = inverse ? inverse_ : forward_;
      cd w(1);
      for (std::size_t k = 0; k < len / 2; ++k) {
        table.push_back(w);
        w *= wl;
      }
    }
}

void Plan::transform(std::vector<std::complex<double>>& a, bool inverse) const {
  using cd = std::complex<double>;
  const std::size_t n = n_;
  for (std::size_t i = 1, j = 0; i < n; ++i) {
    std::size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  const cd* table = inverse ? inverse_.data() : forward_.data();
  for (std::size_t len = 2; len <= n; len <<= 1) {
    const cd* w = table + (len / 2 - 1);
    for (std::size_t i = 0; i < n; i += len) {
      for (std::size_t k = 0; k < len / 2; ++k) {
        const cd u = a[i + k], v = a[i + k + len / 2] * w[k];
        a[i + k] = u + v;
        a[i + k + len / 2] = u - v;
      }
    }
  }
}

void transform(std::vector<std::complex<double>>& a, bool inverse) { Plan(a.size()).transform(a, inverse); }

}  // namespace epochcast::fft
