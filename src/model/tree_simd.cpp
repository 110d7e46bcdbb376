// The extra-trees split scan's instruction set, chosen once at run time (learners.hpp).
#include <atomic>
#include <cstdlib>
#include <string_view>

#include "learners.hpp"
#include "simd_target.hpp"

namespace epochcast {
namespace {

// The split scan's instruction set, chosen once (see learners.hpp); -1: not chosen yet.
std::atomic<int> g_tree_simd{-1};

}  // namespace

bool tree_simd_available(TreeSimd s) {
  if (s == TreeSimd::kBaseline) return true;
#if EPOCHCAST_TREES_AVX2
  __builtin_cpu_init();
  // __builtin_cpu_supports also checks that the OS saves the YMM / ZMM and mask registers.
  if (s == TreeSimd::kAvx2) return __builtin_cpu_supports("avx2") != 0;
  // target("avx512f") lets GCC emit AVX2 and VEX-encoded FMA instructions as well (avx512f
  // implies them to the compiler, not to CPUID: a hypervisor can hide AVX2 or FMA and show
  // AVX-512), so the AVX-512 path asks for them too, as signal.cpp's does for AVX2.
  return __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0 &&
         __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("avx512dq") != 0 &&
         __builtin_cpu_supports("avx512vl") != 0;
#else
  return false;
#endif
}

TreeSimd tree_simd() {
  int v = g_tree_simd.load(std::memory_order_relaxed);
  if (v < 0) {
    const char* env = std::getenv("EPOCHCAST_SIMD");
    const std::string_view forced = env != nullptr ? env : "";
    TreeSimd widest = TreeSimd::kBaseline;
    if (forced != "baseline" && tree_simd_available(TreeSimd::kAvx2)) widest = TreeSimd::kAvx2;
    if (forced != "baseline" && forced != "avx2" && tree_simd_available(TreeSimd::kAvx512)) widest = TreeSimd::kAvx512;
    v = static_cast<int>(widest);
    g_tree_simd.store(v, std::memory_order_relaxed);
  }
  return static_cast<TreeSimd>(v);
}

TreeSimd set_tree_simd(TreeSimd s) {
  const TreeSimd prev = tree_simd();
  g_tree_simd.store(static_cast<int>(tree_simd_available(s) ? s : TreeSimd::kBaseline), std::memory_order_relaxed);
  return prev;
}

void reset_tree_simd() { g_tree_simd.store(-1, std::memory_order_relaxed); }

}  // namespace epochcast
