// Kernel ridge's linear algebra with AVX2 and FMA (this file alone is compiled with -mavx2
// -mfma, src/model/CMakeLists.txt; see kernel_math.hpp). Eigen's namespace is renamed here so
// that none of its templates share a symbol with the baseline's copies.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define Eigen EigenAvx2Fma
#define EPOCHCAST_KERNEL_NS avx2
#define EPOCHCAST_KERNEL_FNS avx2_fns
#define EPOCHCAST_KERNEL_NAME "avx2"
#include "kernel_math.inc"
#else
#include "kernel_math.hpp"
namespace epochcast::kernel_math {
const Fns& avx2_fns() { return baseline_fns(); }
}  // namespace epochcast::kernel_math
#endif
