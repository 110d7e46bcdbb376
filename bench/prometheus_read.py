#!/usr/bin/env python3
"""Prometheus read of a 24-hour range at 1 s step for 6 dcgm-exporter series, timed.

Backfills 24 h x 6 series (1 s resolution) into a temporary TSDB with promtool, serves it with
the real /usr/bin/prometheus on 127.0.0.1, then times, side by side on the same server:
  ours       `epochcast info --prometheus URL --uuid UUID --start S --end E --step 1`
             (chunked query_range + JSON parse + Trace, whole CLI process)
  reference  the same chunked query_range requests from Python (urllib + json), no Trace
usage: bench/prometheus_read.py BUILD_DIR/epochcast [--repeat 3]"""
import json, os, shutil, socket, subprocess, sys, tempfile, time, urllib.parse, urllib.request

cli = sys.argv[1]
repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
NAMES = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK",
         "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP"]
UUID = "GPU-bench-0000"
day = 24 * 3600
end = int(time.time()) // 3600 * 3600 - 3600
start = end - day

work = tempfile.mkdtemp(prefix="epochcast-prom-bench-")
try:
    om = os.path.join(work, "day.om")
    t0 = time.time()
    with open(om, "w") as f:
        for n, name in enumerate(NAMES):
            f.write(f"# TYPE {name} gauge\n")
            for t in range(start, end + 1):
                f.write(f'{name}{{gpu="0",UUID="{UUID}",modelName="NVIDIA H200"}} {(t % 300) + n} {t}\n')
        f.write("# EOF\n")
    data = os.path.join(work, "data")
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", om, data], check=True,
                   stdout=subprocess.DEVNULL)
    print(f"backfilled {len(NAMES)} x {day + 1} samples in {time.time() - t0:.1f} s", file=sys.stderr)
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    cfg = os.path.join(work, "prometheus.yml")
    open(cfg, "w").write("global:\n  scrape_interval: 1h\nscrape_configs: []\n")
    server = subprocess.Popen(["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={data}",
                               "--storage.tsdb.retention.time=10y", f"--web.listen-address=127.0.0.1:{port}",
                               "--log.level=warn"], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if urllib.request.urlopen(url + "/-/ready").status == 200: break
        except Exception: time.sleep(0.1)

    def reference():
        selector = '{__name__=~"%s",UUID="%s"}' % ("|".join(NAMES), UUID)
        points, t = 0, start
        while t <= end:
            e = min(end, t + 9999)
            q = urllib.parse.urlencode({"query": selector, "start": t, "end": e, "step": 1})
            doc = json.load(urllib.request.urlopen(f"{url}/api/v1/query_range?{q}"))
            points += sum(len(r["values"]) for r in doc["data"]["result"])
            t = e + 1
        return points

    def ours():
        r = subprocess.run([cli, "info", "--prometheus", url, "--uuid", UUID, "--start", str(start), "--end", str(end),
                            "--step", "1", "--json"], check=True, capture_output=True, text=True)
        return r.stdout

    reference(); first = ours()  # warm the server's caches for both
    print("ours:", first[:300].replace("\n", " "), file=sys.stderr)
    rows = []
    for _ in range(repeat):
        t = time.perf_counter(); n = reference(); ref_s = time.perf_counter() - t
        t = time.perf_counter(); out = ours(); ours_s = time.perf_counter() - t
        rows.append((ours_s, ref_s, n))
    best_ours = min(r[0] for r in rows); best_ref = min(r[1] for r in rows)
    print(json.dumps({"series": len(NAMES), "points_per_series": day + 1, "requests": 9,
                      "ours_s_best": round(best_ours, 3), "python_reference_s_best": round(best_ref, 3),
                      "ratio_ours_over_reference": round(best_ours / best_ref, 3),
                      "runs": [{"ours_s": round(a, 3), "reference_s": round(b, 3)} for a, b, _ in rows],
                      "reference_points": rows[0][2]}, indent=1))
    server.terminate(); server.wait()
finally:
    shutil.rmtree(work, ignore_errors=True)
