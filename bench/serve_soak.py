#!/usr/bin/env python3
"""`epochcast serve` soaked: 64 concurrent clients for a fixed time with a mix of good,
oversized, slow and malformed requests; throughput, latency, errors and server RSS over time.

/usr/bin/python3 bench/serve_soak.py CLI [--seconds 600] [--clients 64] [--window 30] [--json OUT]
    [--svg OUT]

The server: `serve --listen 127.0.0.1:0 --max-body-mb 1 --threads 4 --json -q` (default model).
Each client loops over its share of the mix (client i takes kind MIX[i % len(MIX)]):
  good       POST /v1/predict?gpus=t4 of the resnet50 H200 trace, keep-alive   -> 200
  oversized  POST with Content-Length 64 MiB (limit 1 MiB), 64 KiB sent       -> 413
  chunked    POST chunked past 1 MiB                                            -> 413
  slow       a request head sent one byte per 0.5 s (a slowloris)               -> 408 at 10 s
  malformed  random bytes / a broken request line / a bad chunk size            -> 400
A client counts an "error" for any other status, a reset before an answer, or no answer within
30 s. Per window: requests answered by kind, good p50/p99 ms, errors, server VmRSS (MB), and
where the time went, so a slow window can be told apart from a slow server:
  route p99   the server's own time in the predict route (its request log, written to a file:
              a pipe the client reads could fill and block the server's workers)
  lag p99     the client's own delay: a thread of this process that sleeps 5 ms, how much longer
              it took (the GIL and the CPU this process waits for); every latency it measures
              carries as much
  CPU         cores busy in the window (of os.cpu_count()): this client, the server, everything
              else on the machine (/proc/stat minus the two), and the 1-minute load average
The verdict lines compare the last window's RSS with the first's ("RSS flat": within 10 % or
20 MB) and the good requests' p99 with the 250 ms target.
"""
import argparse
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRACE = os.path.join(ROOT, "tests", "data", "h200", "resnet50_224_bs256_bf16.smi.csv")
MIX = ["good"] * 8 + ["oversized", "chunked", "slow", "slow", "malformed", "malformed"]  # of 14: 57 % good clients
ANSWER_TIMEOUT_S = 30


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def proc_cpu_s(pid):
    """utime + stime of a process (all its threads), seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_s():
    """CPU seconds spent not idle by all cores (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def load1():
    return float(open("/proc/loadavg").read().split()[0])


class Lag(threading.Thread):
    """How late a 5 ms sleep in this process wakes up: the client's own delay."""

    def __init__(self, stop):
        super().__init__(daemon=True)
        self.stop, self.lock, self.ms = stop, threading.Lock(), []

    def run(self):
        while not self.stop.is_set():
            t = time.perf_counter()
            time.sleep(0.005)
            late = (time.perf_counter() - t) * 1000 - 5
            with self.lock:
                self.ms.append(late)

    def take(self):
        with self.lock:
            out, self.ms = self.ms, []
            return out


class RouteLog:
    """The server's request log (a file): the predict route's own ms per window."""

    def __init__(self, path):
        self.f = open(path, "r", errors="replace")
        self.rest = ""

    def take(self):
        text = self.rest + self.f.read()
        lines = text.split("\n")
        self.rest = lines.pop()
        ms = []
        for line in lines:
            if "POST /v1/predict 200" in line and line.endswith(" ms)"):
                try:
                    ms.append(float(line.rsplit(", ", 1)[1][:-4]))
                except ValueError:
                    pass
        return ms


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.answered = {}
        self.errors = {}
        self.good_ms = []

    def ok(self, kind, ms=None):
        with self.lock:
            self.answered[kind] = self.answered.get(kind, 0) + 1
            if ms is not None:
                self.good_ms.append(ms)

    def err(self, kind, why):
        with self.lock:
            key = f"{kind}: {why}"
            self.errors[key] = self.errors.get(key, 0) + 1

    def take(self):
        with self.lock:
            out = (self.answered, self.errors, self.good_ms)
            self.answered, self.errors, self.good_ms = {}, {}, []
            return out


def status_of(sock):
    """Reads until the status line is complete; the status code or None."""
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            return None
        data += chunk
    parts = data.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def raw_client(port, kind, stats, stop, rng):
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=ANSWER_TIMEOUT_S)
            want = 400
            if kind == "oversized":
                s.sendall(b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Length: 67108864\r\n\r\n" + b"x" * 65536)
                want = 413
            elif kind == "chunked":
                s.sendall(b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
                try:
                    for _ in range(20):  # 20 x 64 KiB = 1.25 MiB > 1 MiB
                        s.sendall(b"10000\r\n" + b"y" * 65536 + b"\r\n")
                except OSError:
                    pass  # refused mid-way: the answer is waiting
                want = 413
            elif kind == "slow":
                head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 64
                want = 408
                for b in head:
                    if stop.is_set():
                        break
                    s.sendall(bytes([b]))
                    time.sleep(0.5)
                    # the front answers 408 at its 10 s head deadline and closes
                    s.setblocking(False)
                    try:
                        peek = s.recv(1, socket.MSG_PEEK)
                    except BlockingIOError:
                        peek = None
                    s.setblocking(True)
                    if peek is not None:
                        break
            else:
                choice = rng.randrange(3)
                if choice == 0:
                    s.sendall(rng.randbytes(rng.randrange(1, 512)) + b"\r\n\r\n")
                elif choice == 1:
                    s.sendall(b"GET\x00/ HTTP/9.9\r\n\r\n")
                else:
                    s.sendall(b"POST /v1/detect HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
            s.settimeout(ANSWER_TIMEOUT_S)
            try:
                code = status_of(s)
            except (ConnectionResetError, BrokenPipeError):
                code = None
            s.close()
            if kind == "malformed" and code is not None and 400 <= code < 500:
                stats.ok(kind)
            elif kind == "malformed" and code is None:
                stats.ok(kind)  # garbage with no request line may be closed without an answer
            elif code == want:
                stats.ok(kind)
            else:
                stats.err(kind, f"status {code}")
        except socket.timeout:
            stats.err(kind, "timeout")
        except OSError as e:
            stats.err(kind, type(e).__name__)


def good_client(port, body, stats, stop):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=ANSWER_TIMEOUT_S)
    while not stop.is_set():
        t = time.perf_counter()
        try:
            conn.request("POST", "/v1/predict?gpus=t4", body=body, headers={"Content-Type": "text/csv"})
            r = conn.getresponse()
            r.read()
            ms = (time.perf_counter() - t) * 1000
            if r.status == 200:
                stats.ok("good", ms)
            else:
                stats.err("good", f"status {r.status}")
            if r.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=ANSWER_TIMEOUT_S)
        except socket.timeout:
            stats.err("good", "timeout")
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=ANSWER_TIMEOUT_S)
        except (OSError, http.client.HTTPException) as e:
            stats.err("good", type(e).__name__)
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=ANSWER_TIMEOUT_S)


def svg(rows, path):
    w, h, pad = 640, 260, 48
    t_max = max(r["t_s"] for r in rows) or 1
    r_max = max(r["rss_mb"] for r in rows) * 1.2 or 1
    q_max = max(r["good_per_s"] for r in rows) * 1.2 or 1
    x = lambda t: pad + (w - 2 * pad) * t / t_max
    y = lambda v, m: h - pad + -(h - 2 * pad) * v / m
    rss = " ".join(f"{x(r['t_s']):.1f},{y(r['rss_mb'], r_max):.1f}" for r in rows)
    qps = " ".join(f"{x(r['t_s']):.1f},{y(r['good_per_s'], q_max):.1f}" for r in rows)
    with open(path, "w") as f:
        f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">\n'
                f'<rect width="{w}" height="{h}" fill="white"/>\n'
                f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>\n'
                f'<polyline points="{rss}" fill="none" stroke="#c0392b" stroke-width="2"/>\n'
                f'<polyline points="{qps}" fill="none" stroke="#2471a3" stroke-width="2"/>\n'
                f'<text x="{pad}" y="16">serve soak: server RSS (red, 0-{r_max:.0f} MB) and good predicts/s '
                f'(blue, 0-{q_max:.0f}) over {t_max:.0f} s</text>\n'
                f'<text x="{w - pad}" y="{h - pad + 16}" text-anchor="end">seconds</text>\n</svg>\n')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--window", type=float, default=30)
    ap.add_argument("--threads", type=int, default=4, help="serve --threads")
    ap.add_argument("--json")
    ap.add_argument("--svg")
    a = ap.parse_args()
    body = open(TRACE, "rb").read()
    log_path = f"/tmp/serve_soak.{os.getpid()}.log"
    log_file = open(log_path, "w")
    # Not -q: the request log carries each route's own time; to a file, which never blocks it.
    p = subprocess.Popen([a.cli, "serve", "--listen", "127.0.0.1:0", "--max-body-mb", "1", "--threads",
                          str(a.threads), "--json"], stdout=subprocess.PIPE, stderr=log_file, text=True)
    port = json.loads(p.stdout.readline())["port"]
    cores = os.cpu_count()
    print(f"serve_soak: {a.cli} pid {p.pid} port {port}; {a.clients} clients for {a.seconds:.0f} s; "
          f"--threads {a.threads}; {cores} cores; {time.strftime('%H:%M:%S', time.gmtime())} UTC, "
          f"load {open('/proc/loadavg').read().split()[:3]}", flush=True)
    stats, stop = Stats(), threading.Event()
    route_log = RouteLog(log_path)
    route_log.take()  # start-up lines
    lag = Lag(stop)
    lag.start()
    threads = []
    for i in range(a.clients):
        kind = MIX[i % len(MIX)]
        t = threading.Thread(target=good_client, args=(port, body, stats, stop)) if kind == "good" else \
            threading.Thread(target=raw_client, args=(port, kind, stats, stop, random.Random(i)))
        t.daemon = True
        t.start()
        threads.append(t)
    rows = [{"t_s": 0, "rss_mb": rss_mb(p.pid), "good_per_s": 0}]
    cpu0 = (sum(os.times()[:2]), proc_cpu_s(p.pid), machine_busy_s())
    print(f"{'t s':>6} {'good/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'route99':>7} {'lag99':>6} {'413':>5} {'408':>5} "
          f"{'400':>5} {'errors':>6} {'RSS MB':>7}  cores: {'client':>6} {'server':>6} {'other':>6} {'load1':>6}")
    t0 = time.time()
    while time.time() - t0 < a.seconds:
        time.sleep(min(a.window, a.seconds - (time.time() - t0)))
        answered, errors, good_ms = stats.take()
        route_ms, lag_ms = route_log.take(), lag.take()
        cpu1 = (sum(os.times()[:2]), proc_cpu_s(p.pid), machine_busy_s())
        el = time.time() - t0
        dt = el - rows[-1]["t_s"]
        client_c, server_c, busy_c = ((b - a_) / dt for a_, b in zip(cpu0, cpu1))
        cpu0 = cpu1
        row = {"t_s": round(el, 1), "answered": answered, "errors": errors, "good_per_s": answered.get("good", 0) / dt,
               "good_p50_ms": pct(good_ms, 50), "good_p99_ms": pct(good_ms, 99), "rss_mb": rss_mb(p.pid),
               "route_p50_ms": pct(route_ms, 50), "route_p99_ms": pct(route_ms, 99), "routes_logged": len(route_ms),
               "client_lag_p99_ms": pct(lag_ms, 99), "client_cores": client_c, "server_cores": server_c,
               "other_cores": max(0.0, busy_c - client_c - server_c), "load1": load1()}
        rows.append(row)
        print(f"{el:6.0f} {row['good_per_s']:7.1f} {row['good_p50_ms']:7.1f} {row['good_p99_ms']:7.1f} "
              f"{row['route_p99_ms']:7.1f} {row['client_lag_p99_ms']:6.1f} "
              f"{answered.get('oversized', 0) + answered.get('chunked', 0):5d} {answered.get('slow', 0):5d} "
              f"{answered.get('malformed', 0):5d} {sum(errors.values()):6d} {row['rss_mb']:7.1f}         "
              f"{client_c:6.2f} {server_c:6.2f} {row['other_cores']:6.2f} {row['load1']:6.2f}"
              + (f"  {errors}" if errors else ""), flush=True)
    stop.set()
    alive = p.poll() is None
    p.terminate()
    p.wait(timeout=30)
    log_file.close()
    os.unlink(log_path)
    windows = rows[1:]
    first, last = windows[0]["rss_mb"], windows[-1]["rss_mb"]
    peak = max(r["rss_mb"] for r in windows)
    total_err = sum(sum(r["errors"].values()) for r in windows)
    worst_p99 = max(r["good_p99_ms"] for r in windows)
    flat = last - first <= max(0.10 * first, 20)
    slow = [r for r in windows if r["good_p99_ms"] > 250]
    if slow:
        def med(key, rs):
            return pct([r[key] for r in rs], 50)
        fast = [r for r in windows if r["good_p99_ms"] <= 250]
        for name, rs in (("windows with p99 > 250 ms", slow), ("the others", fast)):
            if rs:
                print(f"serve_soak: {len(rs)} {name}: median good p99 {med('good_p99_ms', rs):.0f} ms, route p99 "
                      f"{med('route_p99_ms', rs):.1f} ms, client lag p99 {med('client_lag_p99_ms', rs):.1f} ms, cores "
                      f"client {med('client_cores', rs):.2f} server {med('server_cores', rs):.2f} other "
                      f"{med('other_cores', rs):.2f}, load1 {med('load1', rs):.1f}")
    print(f"serve_soak: server alive to the end: {alive}; errors {total_err}; worst window good p99 {worst_p99:.1f} ms "
          f"(target 250); RSS first window {first:.1f} MB, last {last:.1f} MB, peak {peak:.1f} MB: "
          f"{'flat' if flat else 'GROWING'}; load {open('/proc/loadavg').read().split()[:3]}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cli": a.cli, "seconds": a.seconds, "clients": a.clients, "threads": a.threads, "cores": cores,
                       "mix": MIX, "windows": rows,
                       "errors": total_err, "rss_first_mb": first, "rss_last_mb": last, "rss_peak_mb": peak,
                       "worst_good_p99_ms": worst_p99, "alive": alive}, f, indent=1)
    if a.svg:
        svg(rows, a.svg)
    return 0 if alive and total_err == 0 and flat else 1


if __name__ == "__main__":
    sys.exit(main())
