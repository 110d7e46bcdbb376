#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test except those needing a real GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
BUILD_TESTS=ON BUILD_BENCH=ON scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -LE gpu -j"$(nproc)"
# The fuzz targets, a short budget each on the committed corpus (regression, not search).
# Opt-in (FUZZ_CI=1): its clang ASan build of the tree costs more than CI's budget for it
# (docs/fuzzing.md, "In CI", with the measured CPU time).
if [ "${FUZZ_CI:-0}" != 0 ]; then tests/fuzz/ci.sh "${FUZZ_CI_SECONDS:-20}"; fi
