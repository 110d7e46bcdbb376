#!/usr/bin/env bash
# Configures a clang build with a sanitizer, shared by tests/fuzz/ci.sh, scripts/fuzz-long.sh
# and scripts/sanitize.sh, so the fuzz targets and the ASan suite come from one build directory
# with the same flags (one compile of the tree, not two).
#   tests/fuzz/configure.sh DIR fuzz|thread
# -O1 -gline-tables-only: the optimisation the sanitizers' docs recommend, line-level stack
# traces, and less to compile and link than RelWithDebInfo's -O2 -g on CI's two cores; NDEBUG
# as in the shipped build, so the code fuzzed is the code released.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$1
mode=$2
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
case "$mode" in
  fuzz) extra=(-DEPOCHCAST_FUZZ=ON -DEPOCHCAST_SANITIZE=) ;;
  thread) extra=(-DEPOCHCAST_FUZZ=OFF -DEPOCHCAST_SANITIZE=thread) ;;
  *) echo "usage: tests/fuzz/configure.sh DIR fuzz|thread" >&2; exit 2 ;;
esac
# clang and its sanitizer/libFuzzer runtimes are Debian packages (scripts/install-deps.sh).
if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "tests/fuzz/configure.sh: needs clang and libclang-rt-14-dev (apt-get install clang libclang-rt-14-dev," \
       "or scripts/install-deps.sh)" >&2
  exit 2
fi
flags="-O1 -gline-tables-only -DNDEBUG"
CC=clang CXX=clang++ cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" \
  -DEPOCHCAST_TESTS=ON -DEPOCHCAST_BENCH=OFF "${extra[@]}" >/dev/null
