// Kernel ridge's linear algebra for the baseline x86-64 (see kernel_math.hpp).
#define EPOCHCAST_KERNEL_NS baseline
#define EPOCHCAST_KERNEL_FNS baseline_fns
#define EPOCHCAST_KERNEL_NAME "baseline"
#include "kernel_math.inc"
