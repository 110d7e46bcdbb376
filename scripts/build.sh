#!/usr/bin/env bash
# Configures and builds epochcast into build/ (override with BUILD_DIR): the CLI alone unless
# BUILD_TESTS=ON / BUILD_BENCH=ON (scripts/test.sh turns both on). BUILD_TYPE default Release,
# at -O2: the code RelWithDebInfo makes (what the tests and golden files were made with), without
# the debug information that costs ~35 % of the compile (docs/journal/formats.md). UNITY=ON (the
# default) compiles each library's sources a few to a translation unit, so the headers are parsed
# once per batch: 0.43x the CPU time of one file at a time on src/trace (docs/journal/formats.md);
# tests and benchmarks stay one file at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
build_type=${BUILD_TYPE:-Release}
flags=()
[ "$build_type" = Release ] && flags+=(-DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG")
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="$build_type" "${flags[@]}" \
  -DCMAKE_UNITY_BUILD="${UNITY:-ON}" -DEPOCHCAST_TESTS=${BUILD_TESTS:-OFF} -DEPOCHCAST_BENCH=${BUILD_BENCH:-OFF} >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
