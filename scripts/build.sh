#!/usr/bin/env bash
# Configures and builds epochcast into build/ (override with BUILD_DIR): the CLI alone unless
# BUILD_TESTS=ON / BUILD_BENCH=ON (scripts/test.sh turns both on). BUILD_TYPE default RelWithDebInfo.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} \
  -DEPOCHCAST_TESTS=${BUILD_TESTS:-OFF} -DEPOCHCAST_BENCH=${BUILD_BENCH:-OFF} >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
