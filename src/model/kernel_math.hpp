#pragma once
// Kernel ridge's dense linear algebra (Eigen), compiled twice: kernel_math_baseline.cpp for the
// baseline x86-64 (SSE2) and kernel_math_avx2.cpp with -mavx2 -mfma, chosen at run time
// (kernel_math_fns() in learners.cpp follows the extra-trees dispatch: EPOCHCAST_SIMD=baseline
// forces the baseline). The two copies share one source (kernel_math.inc) and differ only in
// the instructions: FMA and wider blocks change the last bits of sums, so the two paths give
// models that differ in the last bits.
//
// The interface is plain pointers on purpose: the AVX2 copy renames Eigen's namespace, and no
// other template may be instantiated there (the linker keeps one copy of an inline function or
// a template from any object, so a std:: template compiled with -mavx2 could replace the
// baseline's and run on a processor without AVX2). The test KernelMath.Avx2ObjectDefinesNoSharedSymbols
// checks the object's symbols.
#include <cstddef>

namespace epochcast::kernel_math {

struct Fns {
  // Fit on standardised rows z (n×d, row-major) and labels y: the Nyström basis is the rows
  // basis_rows (m, ascending). Writes alpha (m) and the intercept (the mean label). w: row
  // weights (n, > 0) of the squared error and the mean, or null for all 1.
  void (*solve)(const double* z, std::ptrdiff_t n, std::ptrdiff_t d, const double* y, const double* w,
                const std::ptrdiff_t* basis_rows, std::ptrdiff_t m, double length_scale, double lambda, bool matern,
                double* alpha, double* intercept);
  // Grid search of length scale (rel_scales[i] * root_d) and λ by the folds fold[i] in
  // [0, folds); writes the best pair, or leaves *scale / *lambda as given when no finite error.
  void (*tune)(const double* z, std::ptrdiff_t n, std::ptrdiff_t d, const double* y, const double* w,
               const std::ptrdiff_t* basis_rows,
               std::ptrdiff_t m, const int* fold, int folds, const double* rel_scales, int n_scales,
               const double* lambdas, int n_lambdas, bool matern, double root_d, double* scale, double* lambda);
  const char* name;
};

const Fns& baseline_fns();
const Fns& avx2_fns();  // only on processors with AVX2 and FMA

}  // namespace epochcast::kernel_math
