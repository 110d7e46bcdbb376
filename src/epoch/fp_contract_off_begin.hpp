// Included (with fp_contract_off_end.hpp at the file's end) by the signal kernels: no contraction
// of a * b + c into a fused multiply-add from here on. It rounds once where the plain expression
// rounds twice, and the results (and the tests' exact expectations, RegionSearchIdentity) must not
// depend on the target's FMA (arm64 has one; baseline x86-64 does not). Pushed here and popped by
// the end header so that in the unity build (scripts/build.sh) it ends with the including file.
// No include guard on purpose: every kernel file includes this pair once.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
