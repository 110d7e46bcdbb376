#!/usr/bin/env bash
# The real-GPU check of `epochcast collect` (issue 6, item 4). NOT RUN YET: no GPU was lent to
# the session that wrote it. Needs an NVIDIA driver, nvidia-smi, python3 with PyTorch (CUDA).
#
#   scripts/gpu-check.sh [OUT_DIR]      (default OUT_DIR: gpu-check-out/, or $OUT when set)
#
# 1. builds the CLI and the gpu-labelled tests into build-gpu/ and runs them;
# 2. runs tests/gpu/train_small.py (6 epochs of ~5 s) under `epochcast collect -- …` at 100 ms
#    with `nvidia-smi -lms 100` logging alongside;
# 3. compares the two logs sample by sample (tests/gpu/compare_logs.py) and detects the period
#    in both against the script's own epoch times;
# 4. measures the collector's CPU and memory over 60 s at 10 Hz and 100 Hz on the real driver.
# Results land in OUT_DIR/summary.json; copy the numbers into docs/collect.md.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-gpu-check-out}}
mkdir -p "$out"
build=${BUILD_DIR:-build-gpu}

echo "== build" >&2
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target epochcast test_gpu >/dev/null
cli="$build/epochcast"
unset EPOCHCAST_NVML_LIBRARY

echo "== gpu tests" >&2
"$build/tests/test_gpu" --gtest_output=json:"$out/test_gpu.json" | tail -3

echo "== training under collect, nvidia-smi alongside" >&2
nvidia-smi --query-gpu=timestamp,index,name,utilization.gpu,utilization.memory,power.draw,clocks.current.sm,clocks.current.memory,memory.used,temperature.gpu \
  --format=csv -i 0 -lms 100 > "$out/smi.csv" &
smi_pid=$!
set +e
"$cli" collect -o "$out/collect.csv" --gpu 0 --interval-ms 100 -- python3 tests/gpu/train_small.py "$out/truth.json" \
  > "$out/collect-stdout.txt" 2> "$out/collect-stderr.txt"
collect_status=$?
set -e
kill "$smi_pid"; wait "$smi_pid" 2>/dev/null || true
echo "collect exit status: $collect_status" >&2

python3 tests/gpu/compare_logs.py "$out/smi.csv" "$out/collect.csv" > "$out/compare.json"
"$cli" detect "$out/collect.csv" --json > "$out/detect-collect.json" || true
"$cli" detect "$out/smi.csv" --json > "$out/detect-smi.json" || true

echo "== collector overhead on the real driver (60 s each)" >&2
python3 - "$cli" "$out" <<'PY'
import json, resource, subprocess, sys, time
cli, out = sys.argv[1], sys.argv[2]
res = {}
for interval in (100, 10):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    subprocess.run([cli, "collect", "-q", "-o", f"{out}/idle-{interval}ms.csv", "--gpu", "0",
                    "--interval-ms", str(interval), "--duration", "60"], check=True)
    wall = time.time() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rows = sum(1 for l in open(f"{out}/idle-{interval}ms.csv") if l[:1].isdigit())
    res[f"{interval}ms"] = {"cpu_pct_of_one_core": 100 * cpu / wall, "peak_rss_mb": after.ru_maxrss / 1024,
                            "rows": rows, "rows_expected": 60000 // interval}
json.dump(res, open(f"{out}/overhead.json", "w"), indent=1)
PY

python3 - "$out" "$collect_status" <<'PY'
import json, sys
out = sys.argv[1]
def load(name):
    try: return json.load(open(f"{out}/{name}"))
    except Exception as e: return {"error": str(e)}
summary = {"collect_exit_status": int(sys.argv[2]), "compare": load("compare.json"),
           "detect_collect": load("detect-collect.json"), "detect_smi": load("detect-smi.json"),
           "truth": load("truth.json"), "overhead": load("overhead.json")}
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
print(json.dumps({k: summary[k] for k in ("collect_exit_status", "overhead")}, indent=1))
print("periods: collect", summary["detect_collect"].get("period_s"), "smi", summary["detect_smi"].get("period_s"),
      "truth", summary["truth"].get("mean_epoch_s"))
PY
