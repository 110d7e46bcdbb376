#!/usr/bin/python3
"""Simulated Prometheus read-back of a real nvidia-smi trace, then `epochcast detect` on it.

The path of PrometheusCollect.ScrapedCollectorReadsBackWithTheSamePeriod without the servers:
the trace is replayed at SPEED, `epochcast collect` samples it every 50 ms, Prometheus scrapes
every 100 ms with Gaussian jitter (sd JITTER s per scrape), and `query_range` (step 0.1 s)
returns, at each grid time, the last scrape at or before it. Timestamps come out regular, but a
value is repeated or skipped whenever scrape jitter crosses the grid (scrape aliasing).

Each seed builds one read-back (numpy default_rng(seed)); every binary given with --bin runs on
the same files, so before/after counts come from the same run. A find is "right" when its
period is within --tol (default 3 %, the bench's criterion) of truth.json's mean epoch / SPEED;
"orig" also counts finds within 4 % of the binary's own answer on the original trace (the
integration test's criterion).

Example:
  /usr/bin/python3 bench/scrape_sim.py --bin /work/main/build/epochcast --bin build/epochcast \\
      --trace tests/data/h200/vgg16_224_bs32_fp32.smi.csv --speed 2 --jitter 0.01 --seeds 30
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import pandas as pd

CHANNELS = {  # canonical tag: nvidia-smi column (what the fake NVML replays and collect exports)
    'gpu_util_pct': 'utilization.gpu [%]',
    'mem_util_pct': 'utilization.memory [%]',
    'power_w': 'power.draw [W]',
    'sm_clock_mhz': 'clocks.current.sm [MHz]',
    'mem_used_mib': 'memory.used [MiB]',
    'temperature_c': 'temperature.gpu',
}


def load_smi(path):
    o = pd.read_csv(path, skipinitialspace=True)
    o.columns = [c.strip() for c in o.columns]
    t = pd.to_datetime(o['timestamp'], format='%Y/%m/%d %H:%M:%S.%f').astype('int64').values / 1e9
    t = t - t[0]
    cols = {}
    for tag, col in CHANNELS.items():
        if col in o.columns:
            cols[tag] = pd.to_numeric(o[col].astype(str).str.extract(r'([-\d.]+)')[0]).values
    return t, cols


def readback(t, cols, speed, jitter_sd, rng, collect_s=0.05, scrape_s=0.1, step_s=0.1):
    """The query_range result: regular grid, values of the last jittered scrape <= grid time."""
    dur = t[-1] / speed
    scr = np.arange(rng.uniform(0, scrape_s), dur, scrape_s)
    scr = np.sort(scr + rng.normal(0, jitter_sd, len(scr)))
    coll = np.floor(scr / collect_s) * collect_s  # the collector's latest sample at scrape time
    idx = np.clip(np.searchsorted(t, coll * speed, side='right') - 1, 0, len(t) - 1)
    grid = np.arange(np.floor(scr[0]), dur, step_s)
    gi = np.searchsorted(scr, grid, side='right') - 1
    ok = gi >= 0
    grid, gi = grid[ok], gi[ok]
    d = pd.DataFrame({k: v[idx[gi]] for k, v in cols.items()})
    d.insert(0, 'timestamp', pd.to_datetime(1.8e9 + grid, unit='s').strftime('%Y-%m-%dT%H:%M:%S.%fZ'))
    d.insert(1, 'gpu_index', 0)
    return d


def detect(binary, path):
    r = subprocess.run([binary, 'detect', path, '--json'], capture_output=True, text=True)
    try:
        return json.loads(r.stdout)
    except ValueError:
        sys.exit(f'{binary} on {path}: exit {r.returncode}, no JSON: {r.stdout[:300]} {r.stderr[:300]}')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--trace', default='tests/data/h200/resnet50_224_bs256_bf16.smi.csv',
                    help='real nvidia-smi trace with NAME.truth.json beside it')
    ap.add_argument('--bin', action='append', help='epochcast binary (repeat to compare; default build/epochcast)')
    ap.add_argument('--speed', type=float, default=2.0, help='replay speed (default 2)')
    ap.add_argument('--jitter', type=float, default=0.01, help='scrape jitter sd in seconds (default 0.01)')
    ap.add_argument('--seeds', type=int, default=30, help='number of read-backs (default 30)')
    ap.add_argument('--seed-start', type=int, default=0, help='first seed (default 0)')
    ap.add_argument('--tol', type=float, default=0.03, help='relative period tolerance against truth (default 0.03)')
    ap.add_argument('--keep', metavar='DIR', help='keep every read-back CSV in DIR (seed_N.csv)')
    ap.add_argument('--verbose', '-v', action='store_true', help='one line per seed and binary')
    a = ap.parse_args()
    bins = a.bin or ['build/epochcast']
    for b in bins:
        if not os.access(b, os.X_OK):
            sys.exit(f'not an executable: {b}')
    if a.speed <= 0 or a.jitter < 0 or a.seeds < 1:
        sys.exit('--speed must be > 0, --jitter >= 0, --seeds >= 1')
    truth_path = a.trace.replace('.smi.csv', '.truth.json')
    try:
        truth = json.load(open(truth_path))['mean_epoch_s'] / a.speed
    except (OSError, KeyError, ValueError) as e:
        sys.exit(f'{truth_path}: {e}')
    t, cols = load_smi(a.trace)
    orig = {b: detect(b, a.trace).get('period_s') or 0.0 for b in bins}
    tmp = a.keep or tempfile.mkdtemp(prefix='scrape_sim_')
    os.makedirs(tmp, exist_ok=True)
    stats = {b: dict(right=0, wrong=0, abstain=0, orig=0, conf_wrong=[], conf_right=[], err_right=[]) for b in bins}
    for s in range(a.seed_start, a.seed_start + a.seeds):
        d = readback(t, cols, a.speed, a.jitter, np.random.default_rng(s))
        fn = os.path.join(tmp, f'seed_{s}.csv')
        with open(fn, 'w') as f:
            f.write('# epochcast-trace v1\n')
            d.to_csv(f, index=False)
        for b in bins:
            j = detect(b, fn)
            st = stats[b]
            p = j.get('period_s') or 0.0
            err = abs(p - truth) / truth if j['found'] else float('nan')
            if not j['found']:
                st['abstain'] += 1
                tag = 'abstain'
            elif err <= a.tol:
                st['right'] += 1
                st['conf_right'].append(j['confidence'])
                st['err_right'].append(err)
                tag = 'right'
            else:
                st['wrong'] += 1
                st['conf_wrong'].append(j['confidence'])
                tag = 'WRONG'
            if j['found'] and orig[b] > 0 and abs(p * a.speed - orig[b]) <= 0.04 * orig[b]:
                st['orig'] += 1
            if a.verbose:
                cand = j.get('candidate_period_s') or 0.0
                print(f'seed {s:3d} {b}: {tag:7s} period {p:.3f} (cand {cand:.3f}, truth {truth:.3f}, '
                      f'{100 * (p or cand) / truth - 100:+.1f} %) conf {j["confidence"]:.2f} | {j.get("reason", "")[:110]}')
        if not a.keep:
            os.remove(fn)
    if not a.keep:
        os.rmdir(tmp)
    name = os.path.basename(a.trace).replace('.smi.csv', '')
    print(f'{name} speed {a.speed:g} jitter {a.jitter * 1000:g} ms seeds {a.seed_start}..{a.seed_start + a.seeds - 1} '
          f'truth {truth:.3f} s')
    for b in bins:
        st = stats[b]
        wc = ' '.join(f'{c:.2f}' for c in sorted(st['conf_wrong'], reverse=True)) or '-'
        med = f'{100 * np.median(st["err_right"]):.2f} %' if st['err_right'] else '-'
        print(f'  {b}: right {st["right"]}, wrong {st["wrong"]} (conf {wc}), abstain {st["abstain"]}; '
              f'within 4 % of its original {orig[b]:.3f} s: {st["orig"]}/{a.seeds}; median err of right {med}')


if __name__ == '__main__':
    main()
