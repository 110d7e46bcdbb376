#!/usr/bin/env python3
"""How much server memory each hostile request shape can take, against the configured caps.

/usr/bin/python3 bench/serve_rss_shapes.py CLI [--json OUT]

One fresh server per shape (`serve --listen 127.0.0.1:0 --max-body-mb 1 --threads 4 -q`,
default model), warmed by one good predict; VmRSS then is the baseline. The shape is sent by
64 connections at once (unless it says otherwise); VmHWM (reset to VmRSS through clear_refs after
the warm-up) - baseline is what it took at its peak.
The cap it is held to: the front's buffer budget (FrontLimits::max_buffered_bytes: 4 x the body
limit, at least 64 MiB, bytes of requests held in all connections) plus what the 4 workers may
hold while parsing a full-size body (measured by the "body at the cap" shape itself).
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRACE = os.path.join(ROOT, "tests", "data", "h200", "resnet50_224_bs256_bf16.smi.csv")
MIB = 1 << 20
BUDGET_MB = 64  # max(4 x 1 MiB, 64 MiB)


def status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS", "VmHWM")):
                k, v = line.split(":")
                out[k] = int(v.split()[0]) / 1024
    return out


def send_and_wait(port, data_fn, hold_s=0.0):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        try:
            data_fn(s)
        except OSError:
            pass
        time.sleep(hold_s)
        try:
            s.settimeout(30)
            s.recv(4096)
        except OSError:
            pass
        s.close()
    except OSError:
        pass


def shapes():
    trace = open(TRACE, "rb").read()
    head = lambda extra: b"POST /v1/predict HTTP/1.1\r\nHost: x\r\n" + extra
    big_headers = b"".join(b"X-H%03d: %s\r\n" % (i, b"v" * 600) for i in range(99))
    body_at_cap = (trace * (MIB // len(trace) + 1))[: MIB - 1]
    boundary = b"BB"
    part = b"--BB\r\nContent-Disposition: form-data; name=\"trace\"; filename=\"t.csv\"\r\n\r\n"
    mp = part + body_at_cap[: MIB - 200] + b"\r\n--BB--\r\n"

    def chunked(s):
        s.sendall(head(b"Transfer-Encoding: chunked\r\n\r\n"))
        for _ in range(600):  # 600 x 1 MiB offered; refused past 1 MiB
            s.sendall(b"100000\r\n" + b"y" * MIB + b"\r\n")

    def many_headers(s):
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        for _ in range(3000):  # 3 M header lines offered, 1000 per send
            s.sendall(b"X: y\r\n" * 1000)

    return [
        ("headers near the head cap (99 x 600 B)", 64, lambda s: s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + big_headers + b"\r\n"), 0),
        ("3 M header lines", 8, many_headers, 0),
        ("Content-Length body at the cap (1 MiB)", 64, lambda s: s.sendall(head(b"Content-Length: %d\r\n\r\n" % len(body_at_cap)) + body_at_cap), 0),
        ("Content-Length 64 MiB announced", 64, lambda s: s.sendall(head(b"Content-Length: %d\r\n\r\n" % (64 * MIB)) + b"x" * 65536), 0),
        ("chunked 600 MiB offered", 16, chunked, 0),
        ("multipart at the cap", 64, lambda s: s.sendall(head(b"Content-Type: multipart/form-data; boundary=BB\r\nContent-Length: %d\r\n\r\n" % len(mp)) + mp), 0),
        ("1000 slowloris heads", 1000, lambda s: s.sendall(b"GET /healthz HTTP/1.1\r\nX: "), 3),
        ("1000 pipelined GETs per connection", 16, lambda s: s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * 1000), 0),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("--json")
    a = ap.parse_args()
    trace = open(TRACE, "rb").read()
    print(f"serve_rss_shapes: {a.cli}, {time.strftime('%H:%M:%S', time.gmtime())} UTC, load "
          f"{open('/proc/loadavg').read().split()[:3]}")
    print(f"{'shape':<42} {'conns':>5} {'base MB':>8} {'peak MB':>8} {'+MB':>7} {'alive':>6}")
    rows = []
    for name, conns, fn, hold in shapes():
        p = subprocess.Popen([a.cli, "serve", "--listen", "127.0.0.1:0", "--max-body-mb", "1", "--threads", "4",
                              "--json", "-q"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        port = json.loads(p.stdout.readline())["port"]
        send_and_wait(port, lambda s: s.sendall(b"POST /v1/predict?gpus=t4 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                                 b"Content-Length: %d\r\n\r\n" % len(trace) + trace))
        time.sleep(0.3)
        with open(f"/proc/{p.pid}/clear_refs", "w") as f:
            f.write("5")  # VmHWM := VmRSS: the peak from here on is the shape's
        base = status(p.pid)["VmRSS"]
        ts = [threading.Thread(target=send_and_wait, args=(port, fn, hold)) for _ in range(conns)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        st = status(p.pid)
        ok = True
        try:
            h = socket.create_connection(("127.0.0.1", port), timeout=10)
            h.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            ok = h.recv(64).startswith(b"HTTP/1.1 200")
            h.close()
        except OSError:
            ok = False
        p.terminate()
        p.wait(timeout=30)
        row = {"shape": name, "connections": conns, "base_mb": base, "peak_mb": st["VmHWM"],
               "added_mb": st["VmHWM"] - base, "alive": ok}
        rows.append(row)
        print(f"{name:<42} {conns:>5} {base:8.1f} {st['VmHWM']:8.1f} {row['added_mb']:+7.1f} {str(ok):>6}", flush=True)
    worst = max(rows, key=lambda r: r["added_mb"])
    print(f"serve_rss_shapes: worst {worst['shape']}: +{worst['added_mb']:.1f} MB against the buffer budget "
          f"{BUDGET_MB} MB (+ workers' parse of 4 bodies at the cap); all alive: {all(r['alive'] for r in rows)}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cli": a.cli, "budget_mb": BUDGET_MB, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
