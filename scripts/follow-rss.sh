#!/usr/bin/env bash
# Peak and resident memory of `epochcast detect --follow` on a growing trace (review 7, the heap
# top pad): writes a 200,000-row canonical trace (100 Hz, 30 s epochs), feeds it to a followed
# file in 100 chunks over ~40 s, and prints VmHWM / VmRSS after the feed, for each binary given,
# side by side. Usage: scripts/follow-rss.sh BINARY [BINARY...]  (EPOCHCAST_MALLOC_DEFAULT=1 in
# the environment measures glibc's default).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BINARY [BINARY...]" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
/usr/bin/python3 - "$dir/big.csv" <<'PY'
import datetime, random, sys
random.seed(1)
out = ["# epochcast-trace v1", "# gpu_index=0 gpu_name=NVIDIA H200 gpu_uuid=GPU-0",
       "timestamp,gpu_index,gpu_uuid,gpu_name,gpu_util_pct,mem_util_pct,power_w,sm_clock_mhz,"
       "graphics_clock_mhz,mem_clock_mhz,mem_used_mib,mem_free_mib,mem_total_mib,temperature_c,"
       "energy_mj,pstate,pcie_link_gen"]
t0 = datetime.datetime(2026, 12, 1, 10, 0, 0)
for i in range(200000):
    t = t0 + datetime.timedelta(milliseconds=10 * i)
    u = max(0, min(100, (95 if (i % 3000) < 2700 else 5) + random.randint(-3, 3)))
    out.append(f"{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond // 1000:03d}Z,0,GPU-0,NVIDIA H200,{u},{u // 3},"
               f"{300 + 2 * u + random.random() * 10:.2f},1980,1980,3201,60000,83771,143771,{50 + u // 10},0,0,5")
open(sys.argv[1], "w").write("\n".join(out) + "\n")
PY
run() {
  local n=$1 bin=$2 f="$dir/grow-$1.csv"
  head -3 "$dir/big.csv" >"$f"
  "$bin" detect --follow --idle-timeout 3 --poll-ms 100 "$f" >"$dir/out-$n" 2>&1 &
  local pid=$!
  tail -n +4 "$dir/big.csv" | split -l 2000 --filter="cat >> $f; sleep 0.4"
  sleep 1
  echo "$bin: $(grep -E 'VmHWM|VmRSS' /proc/$pid/status | tr -s ' \t\n' ' ') lines=$(grep -c . "$dir/out-$n")"
  wait $pid
}
i=0
for b in "$@"; do run "$i" "$b" & i=$((i + 1)); done
wait
