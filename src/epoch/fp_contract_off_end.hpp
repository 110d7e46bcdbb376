// Closes fp_contract_off_begin.hpp (no include guard on purpose). Only GCC's setting is popped;
// Clang's pragma has no pop and stays off to the end of the translation unit (the build uses GCC).
#if !defined(__clang__) && defined(__GNUC__)
#pragma GCC pop_options
#endif
