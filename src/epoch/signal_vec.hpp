// Two-double vector helpers shared by the epoch stage's signal kernels (signal_*.cpp,
// zscore_sweep.cpp, robust_sample.cpp, smoothing.cpp, autocorrelation.cpp, busy_runs.cpp).
// Each of those files turns FMA contraction off first: include this after that pragma.
#pragma once

#include <cstring>

namespace epochcast::signal::vec {

// Two doubles per operation (GCC/Clang vector extension: SSE2 on x86-64, NEON on arm64, plain
// scalar code elsewhere). The hot loops are memory-bound sweeps over 10^6-sample channels;
// the default -O2 build does not vectorise them by itself, and reductions never are (their
// order would change), so the partial sums are spelled out.
using V2 = double __attribute__((vector_size(16)));

inline V2 load2(const double* p) {
  V2 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store2(double* p, V2 v) { std::memcpy(p, &v, sizeof v); }
inline V2 splat(double v) { return V2{v, v}; }
inline double hsum(V2 v) { return v[0] + v[1]; }
// (a0 + a1) / 2, (b0 + b1) / 2: pairwise means of four consecutive values.
inline V2 pair_sums(V2 a, V2 b) {
  return __builtin_shufflevector(a, b, 0, 2) + __builtin_shufflevector(a, b, 1, 3);
}
inline V2 pair_means(V2 a, V2 b) {
  return (__builtin_shufflevector(a, b, 0, 2) + __builtin_shufflevector(a, b, 1, 3)) * splat(0.5);
}

}  // namespace epochcast::signal::vec
