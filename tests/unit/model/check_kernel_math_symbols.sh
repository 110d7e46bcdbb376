#!/bin/sh
# The AVX2 copy of kernel ridge's linear algebra (src/model/kernel_math_avx2.cpp, compiled with
# -mavx2 -mfma) may define no global symbol outside its own namespaces: the linker keeps one
# copy of each inline function or template instance, so a std:: or Eigen:: one defined there
# could replace the baseline's and run AVX2 instructions on a processor without them.
# Usage: check_kernel_math_symbols.sh OBJECT...  (the first object whose name contains
# kernel_math_avx2 is checked, or the one named by KERNEL_MATH_OBJECT).
set -eu
obj=${KERNEL_MATH_OBJECT:-}
if [ -z "$obj" ]; then
  for o in "$@"; do case "$o" in *kernel_math_avx2*) obj=$o ;; esac; done
fi
[ -n "$obj" ] || { echo "no kernel_math_avx2 object among the arguments"; exit 1; }
command -v nm >/dev/null || { echo "nm not found: skipped"; exit 0; }
defined=$(nm -C --defined-only "$obj" | awk '$2 ~ /^[A-Zuvw]$/ { $1 = ""; $2 = ""; sub(/^  /, ""); print }')
[ -n "$defined" ] || { echo "$obj defines no global symbol"; exit 1; }
bad=$(printf '%s\n' "$defined" | grep -v -e 'EigenAvx2Fma' -e '^epochcast::kernel_math::avx2' -e '^DW\.ref\.__gxx_personality_v0$' || true)
if [ -n "$bad" ]; then
  echo "$obj defines global symbols outside its namespaces:"
  printf '%s\n' "$bad" | head -20
  exit 1
fi
echo "$obj: $(printf '%s\n' "$defined" | wc -l) global symbols, all its own"
