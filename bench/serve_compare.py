#!/usr/bin/env python3
"""Why run `epochcast serve`: one prediction over HTTP against one `epochcast predict` process.

/usr/bin/python3 bench/serve_compare.py [BUILD_DIR] [--repeat N] [--json]

Both sides answer the same question for the same traces (the shared H200 traces, copied to a
temporary folder without their host logs so the CLI does not merge them either): the server is
started once (`serve --listen 127.0.0.1:0 --json -q`, model loaded once) and asked over one
keep-alive connection; the reference starts `epochcast predict TRACE --json` per trace (the
default model read from its cache each time). Wall time per answer, median over the repeats,
side by side in the same run, and the answers are checked to be the same predictions.
"""
import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cli = os.path.join(args.build, "epochcast")
    src = os.path.join(ROOT, "tests", "data", "h200")
    with tempfile.TemporaryDirectory() as tmp:
        traces = []
        for name in sorted(os.listdir(src)):
            if name.endswith(".smi.csv"):
                shutil.copy(os.path.join(src, name), tmp)
                traces.append(os.path.join(tmp, name))
        # The default model fitted and cached before either side is timed.
        subprocess.run([cli, "predict", traces[0], "--json"], check=True, capture_output=True)
        server = subprocess.Popen([cli, "serve", "--listen", "127.0.0.1:0", "--json", "-q"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            port = json.loads(server.stdout.readline())["port"]
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            served, spawned, checked = [], [], 0
            for r in range(args.repeat):
                for path in traces:
                    body = open(path, "rb").read()
                    t = time.perf_counter()
                    conn.request("POST", "/v1/predict?name=" + os.path.basename(path), body,
                                 {"Content-Type": "text/csv"})
                    resp = conn.getresponse()
                    answer = json.loads(resp.read())
                    served.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    out = subprocess.run([cli, "predict", path, "--json"], capture_output=True, text=True)
                    spawned.append(time.perf_counter() - t)
                    if resp.status == 200 and out.returncode == 0:
                        same = answer["predictions"] == json.loads(out.stdout)["predictions"]
                        if not same:
                            sys.exit(f"different predictions for {path}")
                        checked += 1
                print(f"\rround {r + 1}/{args.repeat}", end="", file=sys.stderr, flush=True)
            print(file=sys.stderr)
        finally:
            server.terminate()
            server.wait(30)
    a, b = statistics.median(served), statistics.median(spawned)
    result = {"answers": len(served), "same_predictions_checked": checked,
              "serve_median_ms": a * 1e3, "cli_process_median_ms": b * 1e3, "ratio": b / a,
              "load_average": os.getloadavg()[0]}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{'answers':24} {len(served)} ({checked} compared: same predictions)")
        print(f"{'serve, one request':24} median {a * 1e3:8.2f} ms")
        print(f"{'predict, one process':24} median {b * 1e3:8.2f} ms")
        print(f"{'ratio':24} {b / a:8.1f}x  (load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
