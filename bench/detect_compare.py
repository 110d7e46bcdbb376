#!/usr/bin/python3
"""Side-by-side speed of epoch detection: epochcast (C++) against the same core steps in numpy/scipy.

Usage: bench/detect_compare.py BUILD_DIR [--repeat N] [--keep FILE]

Writes the benchmark's 24-hour, 10 Hz, 6-channel synthetic trace (864,000 samples per channel)
with `detect_bench --write-trace`, times `detect_bench --time-file` on it, then times the numpy
version below on the same file in the same run, and prints samples/s of both and the ratio.

The numpy version follows src/epoch/detect.cpp step by step: grid check / np.interp resampling,
absurd values to NaN and gap filling, busy-region threshold, robust z-scores (line removed,
median/MAD, clipped), averaging pyramid, per-level autocorrelation over lags 8..16 (np.dot per
lag on a centred 16384-sample window) with channel weights, candidate choice, refinement, and
the fold + template match of the boundaries (np.bincount, np.correlate). It is vectorised
where numpy allows; Python loops remain only over levels, lags, channels and candidates.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd

KCLIP = 4.0
KWINDOW = 16384


def sample_index(n, max_count=16384, block=16):
    # As signal::sample_layout: all of a short series, else max_count / 16 evenly spread blocks
    # of 16 consecutive samples (a strided subsample costs a cache miss per value).
    if n <= max_count:
        return np.arange(n)
    blocks = max_count // block
    starts = np.arange(blocks) * (n - block) // (blocks - 1)
    return (starts[:, None] + np.arange(block)).ravel()


def quantile_sampled(x, q, max_count=16384):
    return float(np.quantile(x[sample_index(len(x), max_count)], q, method="nearest"))


def fill_gaps(x):
    bad = ~np.isfinite(x)
    if bad.all():
        return None
    if bad.any():
        idx = np.arange(len(x))
        x = x.copy()
        x[bad] = np.interp(idx[bad], idx[~bad], x[~bad])
    return x


def moving_average(x, width):
    c = np.concatenate(([0.0], np.cumsum(x)))
    n = len(x)
    left = (width - 1) // 2
    right = width - 1 - left
    i = np.arange(n)
    a = np.maximum(i - left, 0)
    b = np.minimum(i + right + 1, n)
    return (c[b] - c[a]) / (b - a)


def robust_z(y):
    # Line, median and MAD from the block subsample of at most 16384 values (as the C++);
    # the one full-length step is the clipped affine map. Not re-centred (the consumers are).
    n = len(y)
    idx = sample_index(n)
    k = idx.astype(float)
    ys = y[idx]
    slope, intercept = np.polyfit(k, ys, 1)
    rs = ys - (slope * k + intercept)
    med = float(np.median(rs))
    scale = 1.4826 * float(np.median(np.abs(rs - med)))
    if not scale > 0:
        scale = float(np.sqrt(np.mean((rs - med) ** 2)))
    if not scale > 1e-9 * (abs(float(np.mean(ys))) + 1):
        return None
    i = np.arange(n, dtype=float)
    return np.clip((y - (slope * i + intercept + med)) / scale, -KCLIP, KCLIP)


def acf(x, lags):
    x = x - x.mean()
    e = float(np.dot(x, x))
    if e <= 0:
        return np.zeros(len(lags))
    return np.array([np.dot(x[:-k], x[k:]) / e if 0 < k < len(x) else 0.0 for k in lags])


def window(x):
    if len(x) <= KWINDOW:
        return x
    off = (len(x) - KWINDOW) // 2
    return x[off:off + KWINDOW]


def detect(t, channels):
    idx = sample_index(len(t) - 1)
    dt = float(np.median(t[idx + 1] - t[idx]))
    n = int(round(t[-1] / dt)) + 1
    on_grid = n == len(t) and np.all(np.abs(t - np.arange(len(t)) * dt) <= 0.05 * dt)
    grid = np.arange(n) * dt
    uni = {}
    for name, (lo, hi, v) in channels.items():
        v = np.where((v < lo) | (v > hi), np.nan, v)
        if not on_grid:
            ok = np.isfinite(v)
            v = np.interp(grid, t[ok], v[ok])
        v = fill_gaps(v)
        if v is not None:
            uni[name] = v
    # busy region on utilization
    act = uni["gpu_util_pct"]
    qlo, qhi = quantile_sampled(act, 0.01), quantile_sampled(act, 0.99)
    sm = moving_average(act, 3)
    busy = sm > qlo + 0.5 * (qhi - qlo)
    edges = np.flatnonzero(np.diff(busy.astype(np.int8)))
    begin = int(np.argmax(busy))
    end = int(n - np.argmax(busy[::-1]))
    _ = edges
    # z-scores and pyramid
    pyramid = []
    for v in uni.values():
        z = robust_z(v[begin:end])
        if z is None:
            continue
        levels = [z]
        while len(levels[-1]) >= 64:
            x = levels[-1]
            m = len(x) // 2
            levels.append(0.5 * (x[0:2 * m:2] + x[1:2 * m:2]))
        pyramid.append(levels)
    nlev = len(pyramid[0])
    # per-level ACF, coarse to fine, weights, combined peaks; levels beyond the coarse levels'
    # bracket are computed only when a probe on the centred 1/8 of the window says they could
    # count (as propose_periods / period_bracketed / probe_needs_level)
    per = {}
    best_peak = np.zeros(len(pyramid))

    def peaks(frm):
        w = best_peak ** 2
        out = []
        for l in sorted(per):
            if l < frm:
                continue
            lags, rows = per[l]
            total = (w[:, None] * rows).sum(0) / w.sum()
            inner = total[1:-1]
            pk = np.flatnonzero((inner > total[:-2]) & (inner >= total[2:]) & (inner > 0.02)) + 1
            for i in pk:
                out.append((lags[i] * 2.0 ** l, total[i], l))
        return out

    def level_rows(l, lags, hi, width):
        rows = []
        for levels in pyramid:
            x = window(levels[l])
            if len(x) > width:
                off = (len(x) - width) // 2
                x = x[off:off + width]
            x = x.copy()
            if l + 1 < nlev and len(x) >= 8 * hi:
                x = x - moving_average(x, 4 * hi)
            rows.append(acf(x, lags))
        return np.array(rows)

    def local_peaks(r):
        inner = r[..., 1:-1]
        return (inner > r[..., :-2]) & (inner >= r[..., 2:]), inner

    bracketed, top = False, 0.0
    for l in range(nlev - 1, -1, -1):
        length = len(pyramid[0][l])
        lo = 8
        hi = length // 2 + 1 if l + 1 == nlev else 16
        lags = np.arange(max(1, lo - 2), min(hi + 1, length - 1) + 1)
        if bracketed:
            probe = level_rows(l, lags, hi, KWINDOW // 8)
            pk, inner = local_peaks(probe)
            need = bool((pk & (inner >= best_peak[:, None] - 0.1)).any())
            w = best_peak ** 2
            total = (w[:, None] * probe).sum(0) / w.sum()
            tpk, tinner = local_peaks(total)
            need = need or bool((tpk & (tinner >= 0.5 * top - 0.1)).any())
            if not need:
                continue
        rows = level_rows(l, lags, hi, KWINDOW)
        pk, inner = local_peaks(rows)
        for c in range(len(pyramid)):
            if pk[c].any():
                best_peak[c] = max(best_peak[c], float(inner[c][pk[c]].max()))
        per[l] = (lags, rows)
        if l > 0:
            cands = peaks(l)
            top = max((c[1] for c in cands), default=0.0)
            bracketed = bool(cands) and 16 * 2.0 ** (l - 1) * 4.4 < min(c[0] for c in cands if c[1] >= 0.5 * top)
    w = best_peak ** 2
    cands = peaks(0)
    period, score, level = max(cands, key=lambda c: c[1])
    # refine two levels finer
    lr = max(0, level - 2)
    centre = period / 2 ** lr
    lags = np.arange(int(centre * 0.9 - 2), int(centre * 1.1 + 2) + 1)
    total = sum(wc * acf(window(levels[lr]), lags) for wc, levels in zip(w, pyramid)) / w.sum()
    k = int(np.argmax(total[1:-1])) + 1
    a, b, c = total[k - 1], total[k], total[k + 1]
    off = 0.5 * (a - c) / (a - 2 * b + c) if a - 2 * b + c != 0 else 0.0
    period = (lags[k] + off) * 2 ** lr
    # fold at the boundary level and match the template
    lb = 0
    while lb + 1 < nlev and period / 2 ** lb > 64:
        lb += 1
    p = period / 2 ** lb
    bins = int(np.ceil(p))
    length = len(pyramid[0][lb])
    b_of = np.minimum((np.mod(np.arange(length), p) / p * bins).astype(int), bins - 1)
    cnt = np.bincount(b_of, minlength=bins)
    anomaly = np.zeros(bins)
    profiles = []
    for levels in pyramid:
        z = levels[lb]
        prof = np.bincount(b_of, weights=z, minlength=bins) / np.maximum(cnt, 1)
        sigma = max(1e-3, float(np.sqrt(np.mean((z - prof[b_of]) ** 2))))
        anomaly += np.abs(prof - np.median(prof)) / sigma
        profiles.append((z, prof, sigma))
    phase0 = (int(np.argmax(anomaly)) + 0.5) * p / bins
    half = int(min(np.ceil(p / 2), 24))
    search = int(max(1, min(round(p / 6), 12)))
    score = 0
    for z, prof, sigma in profiles:
        tmpl = prof[np.minimum((np.mod(phase0 + np.arange(-half, half + 1), p) / p * bins).astype(int), bins - 1)]
        tmpl = (tmpl - tmpl.mean()) / sigma ** 2
        score = score + np.correlate(z, tmpl, mode="same")
    ks = np.arange(int((length - phase0) / p) + 1)
    q = np.rint(phase0 + ks * p).astype(int)
    q = q[(q >= search) & (q < length - search)]
    offs = np.arange(-search, search + 1)
    pos = q + offs[np.argmax(score[q[:, None] + offs[None, :]], axis=1)]
    slope = np.polyfit(np.arange(len(pos)), pos, 1)[0] if len(pos) >= 2 else p
    return slope * 2 ** lb * dt


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    build = sys.argv[1]
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 5
    bench = os.path.join(build, "bench", "detect_bench")
    keep = sys.argv[sys.argv.index("--keep") + 1] if "--keep" in sys.argv else None
    path = keep or os.path.join(tempfile.mkdtemp(prefix="detect_compare_"), "day.csv")
    if not os.path.exists(path):
        subprocess.run([bench, "--write-trace", path], check=True)
    cpp = json.loads(subprocess.run([bench, "--time-file", path, "--repeat", str(repeat)], check=True,
                                    capture_output=True, text=True).stdout)
    df = pd.read_csv(path, comment="#")
    ts = pd.to_datetime(df["timestamp"], utc=True)
    t = ((ts - ts.iloc[0]).dt.total_seconds()).to_numpy()
    limits = {"gpu_util_pct": (0, 100.5), "mem_util_pct": (0, 100.5), "power_w": (0, 5000),
              "sm_clock_mhz": (0, 10000), "mem_used_mib": (0, 1e7), "host_cpu_util_pct": (0, 25600)}
    channels = {k: (lo, hi, df[k].to_numpy(dtype=float)) for k, (lo, hi) in limits.items() if k in df}
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        period = detect(t, channels)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
    wall.sort()
    cpu.sort()
    samples = len(t) * len(channels)
    print(f"trace: {path}: {len(t)} samples x {len(channels)} channels; best of {repeat}")
    print(f"{'implementation':<26} {'wall ms':>8} {'CPU ms':>8} {'samples/s (CPU)':>16} {'period s':>9}")
    print(f"{'epochcast (C++)':<26} {cpp['best_ms']:>8.1f} {cpp['best_cpu_ms']:>8.1f} "
          f"{samples / (cpp['best_cpu_ms'] / 1e3):>16.3g} {cpp['period_s']:>9.2f}")
    print(f"{'numpy/scipy core steps':<26} {wall[0] * 1e3:>8.1f} {cpu[0] * 1e3:>8.1f} "
          f"{samples / cpu[0]:>16.3g} {period:>9.2f}")
    print(f"speed-up: {cpu[0] * 1e3 / cpp['best_cpu_ms']:.1f}x CPU time, {wall[0] * 1e3 / cpp['best_ms']:.1f}x wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
