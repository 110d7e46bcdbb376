#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test except those needing a real GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
BUILD_TESTS=ON BUILD_BENCH=ON scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -LE gpu -j"$(nproc)"
# The fuzz targets, a short budget each on the committed corpus (regression, not search).
# Opt-in (FUZZ_CI=1) until the clang ASan build of every target, fuzz_http included, has passed
# once on a CI-shaped machine: it has not been run yet (docs/HACKING.md, "Fuzzing").
if [ "${FUZZ_CI:-0}" != 0 ]; then tests/fuzz/ci.sh "${FUZZ_CI_SECONDS:-20}"; fi
