#!/usr/bin/env bash
# CI's fuzz regression (scripts/test.sh): builds the libFuzzer targets (clang, ASan+UBSan) and
# runs each for a fixed short budget on its seed corpus (tests/fuzz/run.sh builds it from the
# committed files: tests/data, data/, tests/fuzz/corpus). Any crash, sanitizer report, hang or
# FUZZ FINDING fails the run; the inputs are kept under build-fuzz/fuzz-work/crashes-*.
#   tests/fuzz/ci.sh [SECONDS_PER_TARGET]   (default 20; FUZZ_BUILD=dir, JOBS=N)
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-20}
B=${FUZZ_BUILD:-build-fuzz}
tests/fuzz/configure.sh "$B" fuzz
targets=(trace formats tables model prometheus http)
cmake --build "$B" -j"${JOBS:-$(nproc)}" --target fuzz_model_seed $(printf 'fuzz_%s ' "${targets[@]}")
rm -rf "$B"/fuzz-work/crashes-*
FUZZ_BUILD=$B tests/fuzz/run.sh "$secs" "${targets[@]}"
status=0
for t in "${targets[@]}"; do
  log=$B/fuzz-work/fuzz_$t.log
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}' || true)
  # slow-unit-* (over 10 s of wall time, easily reached on a loaded box) is kept, not a failure;
  # crash-, leak-, timeout- and oom- inputs are.
  if [ -n "$(ls "$B/fuzz-work/crashes-$t" 2>/dev/null | grep -v '^slow-unit-')" ] || ! grep -q 'Done [0-9]* runs' "$log"; then
    echo "fuzz-ci: fuzz_$t FAILED (see $log)"
    status=1
  else
    echo "fuzz-ci: fuzz_$t ok, ${runs:-?} executions in ${secs} s"
  fi
done
exit $status
