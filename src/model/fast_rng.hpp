// The random generator of extra trees and kernel ridge's basis draw (private to src/model).
#pragma once

#include <cstdint>

namespace epochcast {

// xoshiro256** seeded through splitmix64: a few cycles a draw, and the same stream on every
// platform and standard library (std:: distributions differ between libstdc++ and libc++).
// Draw runs use a local copy: GCC updates a state in memory with 128-bit vectors reading what
// the previous draw stored as scalars, a store-forwarding stall per draw (13 % of a fit).
class FastRng {
 public:
  explicit FastRng(std::uint64_t seed) {
    for (auto& w : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      w = z ^ (z >> 31);
    }
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  // Uniform in [0, bound), bound < 2^32, unbiased (Lemire's multiply-and-reject).
  std::uint32_t below(std::uint32_t bound) {
    std::uint64_t m = (next() >> 32) * bound;
    if (static_cast<std::uint32_t>(m) < bound) {
      const std::uint32_t floor = static_cast<std::uint32_t>(-bound) % bound;
      while (static_cast<std::uint32_t>(m) < floor) m = (next() >> 32) * bound;
    }
    return static_cast<std::uint32_t>(m >> 32);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

}  // namespace epochcast
