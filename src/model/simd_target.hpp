// Function attributes for the run-time chosen AVX2 / AVX-512 paths (tree_simd() picks one).
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define EPOCHCAST_TREES_AVX2 1
#define EPOCHCAST_AVX2 __attribute__((target("avx2")))
#define EPOCHCAST_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl")))
#endif
