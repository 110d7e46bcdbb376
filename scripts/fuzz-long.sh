#!/usr/bin/env bash
# Long fuzzing: every libFuzzer target for SECONDS each (default 4 h), at nice 10, keeping
# its corpus between runs (build-fuzz/fuzz-work/corpus-*), then one summary line per target:
# executions, executions per second, coverage (libFuzzer's cov: edges and ft: features), corpus
# size, crash inputs. Record each line in docs/fuzzing.md ("Runs") with the date and load.
#   scripts/fuzz-long.sh [SECONDS_PER_TARGET] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-14400}
shift || true
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(trace formats tables model prometheus http)
B=${FUZZ_BUILD:-build-fuzz}
if [ ! -x "$B/tests/fuzz/fuzz_http" ]; then
  tests/fuzz/configure.sh "$B" fuzz
  nice cmake --build "$B" -j"${JOBS:-2}" --target fuzz_model_seed $(printf 'fuzz_%s ' "${targets[@]}")
fi
started=$(date -u +%FT%TZ)
# nice 10 (FUZZ_NICE): at 19 the runs starved on a loaded box. FUZZ_RUNS=N: stop at N executions.
FUZZ_BUILD=$B tests/fuzz/run.sh "$secs" "${targets[@]}"
echo "fuzz-long: started $started, ${secs} s per target, load $(cut -d' ' -f1-3 /proc/loadavg)"
for t in "${targets[@]}"; do
  log=$B/fuzz-work/fuzz_$t.log
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}' | tail -n1)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | awk '{print $2}' | tail -n1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n1 | awk '{print $2}')
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -n1 | awk '{print $2}')
  corpus=$(ls "$B/fuzz-work/corpus-$t" 2>/dev/null | wc -l)
  crashes=$(ls "$B/fuzz-work/crashes-$t" 2>/dev/null | wc -l)
  echo "fuzz-long: fuzz_$t executions=${runs:-?} exec/s=${rate:-?} cov=${cov:-?} ft=${ft:-?} corpus=$corpus crashes=$crashes seconds=$secs"
done
