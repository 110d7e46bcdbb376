#!/usr/bin/env bash
# Builds seed corpora from the repo's real files and runs each libFuzzer target for SECONDS
# (default 120) under ASan+UBSan. Needs the build from docs/HACKING.md (build-fuzz).
# Usage: tests/fuzz/run.sh [SECONDS] [TARGET...]   (targets: trace formats tables model prometheus http)
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-120}; shift || true
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(trace formats tables model prometheus http)
B=${FUZZ_BUILD:-build-fuzz}
W=$B/fuzz-work
shared=../shared/traces/h200
mkdir -p "$W"

# seed NAME SELECTOR_BYTE FILE [MAX_BYTES]: the file's head (whole lines) behind a selector byte.
seed() {
  local dir=$W/seeds-$1 max=${4:-16000}
  mkdir -p "$dir"
  { printf "\\x$2"
    if [ "$(stat -c %s "$3")" -gt "$max" ]; then head -c "$max" "$3" | sed '$d'; else cat "$3"; fi
  } > "$dir/$(basename "$3").$2"
}

if [[ " ${targets[*]} " == *" trace "* ]]; then
  for f in tests/data/h200/*.csv tests/data/dcgmi/*.log tests/data/prometheus/*.csv tests/data/bad/*.csv \
           tests/data/bad/*.log $shared/*.csv; do
    [ -f "$f" ] || continue
    for sel in 00 01 80 21; do seed trace $sel "$f" 6000; done
  done
  seed trace 40 tests/data/bad/header_only.smi.csv   # --fields with a header
fi
if [[ " ${targets[*]} " == *" formats "* ]]; then
  # selector: low 3 bits the format (0 auto), 0x40 gzip, 0x80 cut in half
  for f in tests/data/formats/*.log tests/data/formats/*.csv tests/data/formats/*.json; do
    for sel in 00 08 40 c0; do seed formats $sel "$f" 6000; done
  done
  zcat tests/data/formats/scrapes.metrics.txt.gz | head -c 8000 > "$W/scrapes.txt" && seed formats 00 "$W/scrapes.txt"
fi
if [[ " ${targets[*]} " == *" tables "* ]]; then
  seed tables 00 data/nvidiasmi_devicequery_all.csv 20000
  seed tables 04 data/nvidiasmi_devicequery_all.csv 20000
  seed tables 01 data/gpus.csv
  seed tables 02 data/prices.csv
fi
if [[ " ${targets[*]} " == *" model "* ]]; then
  mkdir -p "$W/seeds-model"
  # A small model (few rounds and trees) keeps each execution fast; the layout is fit -o's.
  [ -f "$W/seeds-model/small.json" ] || "$B/tests/fuzz/fuzz_model_seed" "$W/seeds-model/small.json"
fi
if [[ " ${targets[*]} " == *" prometheus "* ]]; then
  mkdir -p "$W/seeds-prometheus"
  python3 - "$W/seeds-prometheus" <<'PY'
import json, math, sys
out = sys.argv[1]
vals = lambda f: [[1764515000 + 0.5 * i, f(i)] for i in range(121)]
doc = {"status": "success", "data": {"resultType": "matrix", "result": [
  {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "UUID": "GPU-1", "Hostname": "h", "modelName": "NVIDIA H200"},
   "values": vals(lambda i: str(97 if i % 16 < 13 else 5))},
  {"metric": {"gpu": "0", "UUID": "GPU-1"}, "values": vals(lambda i: str(300 + 50 * math.sin(i)))}]}}
open(out + "/two_series.json", "wb").write(b"\x01" + json.dumps(doc).encode())
open(out + "/error.json", "wb").write(b"\x07" + b'{"status":"error","errorType":"bad_data","error":"parse error"}')
open(out + "/times.txt", "wb").write(b"\x06" + b"now-15m")
PY
fi

if [[ " ${targets[*]} " == *" http "* ]]; then
  # Hand-made requests (tests/fuzz/corpus/http: every route, chunked, multipart, pipelined),
  # and real uploads of a small trace to each POST route.
  mkdir -p "$W/seeds-http"
  small=$(head -c 6000 tests/data/h200/resnet50_224_bs256_bf16.smi.csv | sed '$d')
  for route in "/v1/predict?gpus=t4" "/v1/detect" "/v1/report?gpus=t4&epochs=3" "/v1/predict?job=x&epoch_s=2"; do
    printf 'POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s' "$route" "${#small}" "$small" \
      > "$W/seeds-http/upload-$(echo "$route" | tr -c 'a-z0-9' _)"
  done
  # A small model keeps each predict fast.
  mkdir -p "$W/seeds-model"
  [ -f "$W/seeds-model/small.json" ] || "$B/tests/fuzz/fuzz_model_seed" "$W/seeds-model/small.json"
  export EPOCHCAST_FUZZ_MODEL=$PWD/$W/seeds-model/small.json
fi

# Longest input per target: the model files are bigger; trace inputs reach detect_epochs,
# whose cost grows with the trace (docs/fuzzing.md, "fuzz_trace's cost").
max_len() {
  case "$1" in
    model) echo 40000 ;;
    trace) echo "${FUZZ_TRACE_MAX_LEN:-20000}" ;;
    *) echo 20000 ;;
  esac
}

for t in "${targets[@]}"; do
  mkdir -p "$W/corpus-$t" "$W/crashes-$t" "$W/seeds-$t"
  # The committed corpus: hand-made inputs and every past finding's reproducer (a regression).
  [ -d "tests/fuzz/corpus/$t" ] && cp tests/fuzz/corpus/"$t"/* "$W/seeds-$t/"
  echo "== fuzz_$t for ${secs}s"
  # -timeout: a small input taking seconds is a hang; -rss_limit_mb: runaway allocation.
  # FUZZ_RUNS=N stops after N executions (else the time budget alone); FUZZ_NICE (default 10).
  runs=(); [ -n "${FUZZ_RUNS:-}" ] && runs=(-runs="$FUZZ_RUNS")
  nice -n "${FUZZ_NICE:-10}" "$B/tests/fuzz/fuzz_$t" "$W/corpus-$t" "$W/seeds-$t" -max_total_time="$secs" -timeout=10 \
      "${runs[@]}" -rss_limit_mb=3072 -max_len="$(max_len "$t")" -print_final_stats=1 -artifact_prefix="$W/crashes-$t/" \
      2>&1 | tee "$W/fuzz_$t.log" | grep -E "^(==|FUZZ|SUMMARY|stat::number_of_executed_units|Done|#[0-9]+ +DONE)|ERROR" || true
done
