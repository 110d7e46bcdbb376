#!/usr/bin/env python3
"""`epochcast serve` under load and hostile clients, for one or more builds side by side.

/usr/bin/python3 bench/serve_load.py CLI [CLI...] [--requests N] [--slow N] [--keepalive N]

For each CLI binary (e.g. main's build and this branch's), in the same run: a server is started
(`serve --listen 127.0.0.1:0 --max-body-mb 1 --threads 4 --json -q`, default model) and measured:
  keepalive1  POST /v1/predict of one H200 trace over one keep-alive connection: p50/p99 ms, and
              the server's CPU per request (/proc/PID/stat: load-independent), beside GET /healthz
              on the same connection as the reference (the server's own cost per request)
  c64         64 threads, one keep-alive connection each, N/64 predicts each: errors, client
              timeouts (5 s), p50/p99 ms, requests/s
  slowloris   --slow connections from 127.0.0.2-5 each holding a partial head, then 20
              GET /healthz probes from 127.0.0.1 (fresh connection each): answered, p50/max ms
  rss         server VmRSS before / after, VmHWM (kB)
Timing on a shared machine is noisy: compare builds within one run, and note the load average
(printed).
"""
import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRACE = os.path.join(ROOT, "tests", "data", "h200", "resnet50_224_bs256_bf16.smi.csv")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def rss(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS", "VmHWM")):
                k, v = line.split(":")
                out[k] = int(v.split()[0])
    return out


def start(cli):
    p = subprocess.Popen([cli, "serve", "--listen", "127.0.0.1:0", "--max-body-mb", "1", "--threads", "4",
                          "--json", "-q"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    return p, json.loads(line)["port"]


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def healthz_loop(port, n, lat):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    for _ in range(n):
        t = time.perf_counter()
        conn.request("GET", "/healthz")
        r = conn.getresponse()
        r.read()
        lat.append((time.perf_counter() - t) * 1000)
    conn.close()


def predict_loop(port, n, body, lat, errors, timeouts):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    for _ in range(n):
        t = time.perf_counter()
        try:
            conn.request("POST", "/v1/predict?gpus=t4", body=body, headers={"Content-Type": "text/csv"})
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                errors.append(r.status)
            lat.append((time.perf_counter() - t) * 1000)
        except socket.timeout:
            timeouts.append(1)
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        except Exception as e:  # reset, refused
            errors.append(type(e).__name__)
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.close()


def measure(cli, requests, slow, keepalive):
    p, port = start(cli)
    body = open(TRACE, "rb").read()
    res = {"cli": cli, "rss_start_kB": rss(p.pid)["VmRSS"]}
    lat, err, to = [], [], []
    predict_loop(port, 5, body, [], [], [])  # warm
    c0 = cpu_s(p.pid)
    predict_loop(port, keepalive, body, lat, err, to)
    cpu_ms = 1000 * (cpu_s(p.pid) - c0) / keepalive
    hz = []
    c0 = cpu_s(p.pid)
    healthz_loop(port, 10 * keepalive, hz)
    hz_cpu_ms = 1000 * (cpu_s(p.pid) - c0) / (10 * keepalive)
    res["keepalive1"] = {"p50_ms": round(pct(lat, 50), 2), "p99_ms": round(pct(lat, 99), 2), "errors": len(err),
                         "timeouts": len(to), "server_cpu_ms_per_request": round(cpu_ms, 2),
                         "healthz_p50_ms": round(pct(hz, 50), 2), "healthz_server_cpu_ms": round(hz_cpu_ms, 3)}
    lat, err, to = [], [], []
    threads = [threading.Thread(target=predict_loop, args=(port, max(1, requests // 64), body, lat, err, to))
               for _ in range(64)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    res["c64"] = {"requests": len(lat) + len(err) + len(to), "errors": len(err), "timeouts": len(to),
                  "p50_ms": round(pct(lat, 50), 1), "p99_ms": round(pct(lat, 99), 1),
                  "req_per_s": round(len(lat) / wall, 1)}
    socks = []
    for i in range(slow):
        s = socket.socket()
        try:
            s.bind((f"127.0.0.{2 + i % 4}", 0))
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            socks.append(s)
        except OSError:
            s.close()
    time.sleep(0.5)
    probes, answered = [], 0
    for _ in range(20):
        t = time.perf_counter()
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=3)
            c.request("GET", "/healthz")
            if c.getresponse().status == 200:
                answered += 1
            c.close()
        except Exception:
            pass
        probes.append((time.perf_counter() - t) * 1000)
    res["slowloris"] = {"connections": len(socks), "probes_answered": answered, "of": 20,
                        "p50_ms": round(pct(probes, 50), 1), "max_ms": round(max(probes), 1)}
    for s in socks:
        s.close()
    r = rss(p.pid)
    res["rss_end_kB"], res["rss_peak_kB"] = r["VmRSS"], r["VmHWM"]
    p.terminate()
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cli", nargs="+")
    ap.add_argument("--requests", type=int, default=1280)
    ap.add_argument("--slow", type=int, default=1000)
    ap.add_argument("--keepalive", type=int, default=200, help="keep-alive predicts at concurrency 1")
    args = ap.parse_args()
    print("load average", open("/proc/loadavg").read().split()[:3], "at", time.strftime("%H:%M:%S UTC", time.gmtime()))
    for cli in args.cli:
        print(json.dumps(measure(cli, args.requests, args.slow, args.keepalive)), flush=True)
    print("load average", open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    sys.exit(main())
