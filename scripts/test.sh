#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test except those needing a real GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
BUILD_TESTS=ON BUILD_BENCH=ON scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -LE gpu -j"$(nproc)"
# The fuzz targets, a short budget each on the committed corpus (regression, not search).
if [ "${FUZZ_CI:-1}" != 0 ]; then tests/fuzz/ci.sh "${FUZZ_CI_SECONDS:-20}"; fi
