#!/usr/bin/env python3
"""Compares `epochcast collect` output with an nvidia-smi log of the same run, sample by sample.

usage: compare_logs.py SMI_CSV COLLECT_CSV [--tolerance-ms 60]
Each collect sample is paired with the nvidia-smi sample nearest in time (within the tolerance);
prints per metric the pairs, the mean absolute difference and the share within a small bound."""
import csv
import datetime as dt
import json
import sys

PAIRS = {  # canonical tag -> (nvidia-smi header prefix, bound counted as "equal")
    "gpu_util_pct": ("utilization.gpu", 10.0),
    "power_w": ("power.draw", 15.0),
    "sm_clock_mhz": ("clocks.current.sm", 30.0),
    "mem_used_mib": ("memory.used", 64.0),
    "temperature_c": ("temperature.gpu", 1.0),
}


def number(cell):
    cell = cell.strip().split(" ")[0]
    try:
        return float(cell)
    except ValueError:
        return None


def read_smi(path):
    rows = list(csv.reader(open(path)))
    header = [h.strip() for h in rows[0]]
    out = []
    for r in rows[1:]:
        if len(r) != len(header):
            continue
        t = dt.datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()  # local time
        out.append((t, {h: number(c) for h, c in zip(header, r)}))
    return header, out


def read_collect(path):
    lines = [l for l in open(path) if not l.startswith("#")]
    rows = list(csv.reader(lines))
    header = rows[0]
    out = []
    for r in rows[1:]:
        t = dt.datetime.strptime(r[0], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc).timestamp()
        out.append((t, {h: (float(c) if c else None) for h, c in zip(header[4:], r[4:])}))
    return out


def main():
    smi_path, collect_path = sys.argv[1], sys.argv[2]
    tol = float(sys.argv[sys.argv.index("--tolerance-ms") + 1]) / 1000 if "--tolerance-ms" in sys.argv else 0.06
    header, smi = read_smi(smi_path)
    col = read_collect(collect_path)
    times = [t for t, _ in smi]
    import bisect
    report = {"smi_samples": len(smi), "collect_samples": len(col), "tolerance_s": tol, "metrics": {}}
    for tag, (prefix, bound) in PAIRS.items():
        smi_col = next((h for h in header if h.startswith(prefix)), None)
        if smi_col is None:
            continue
        diffs = []
        for t, values in col:
            i = bisect.bisect_left(times, t)
            best = min((j for j in (i - 1, i) if 0 <= j < len(times)), key=lambda j: abs(times[j] - t), default=None)
            if best is None or abs(times[best] - t) > tol:
                continue
            a, b = values.get(tag), smi[best][1].get(smi_col)
            if a is not None and b is not None:
                diffs.append(abs(a - b))
        if diffs:
            report["metrics"][tag] = {"pairs": len(diffs), "mean_abs_diff": sum(diffs) / len(diffs),
                                      "share_within_bound": sum(d <= bound for d in diffs) / len(diffs),
                                      "bound": bound}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
