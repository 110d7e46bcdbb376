#!/usr/bin/python3
"""Per-step shares of a detection from `perf record` data (docs/detection.md, "Speed").

Usage: bench/detect_profile_steps.py PERF_DATA [PERF_DATA ...]

Record with, e.g.:
  perf record -e cpu-clock -F 20000 -o main.data -- BUILD/bench/detect_bench --time-file day.csv --repeat 400
Groups `perf report` symbols into the detector's steps (CSV parsing left out of the shares) and
prints one column per file: share of the detection and sample count.
"""
import subprocess, sys, re
def groups(f):
    out = subprocess.run(['perf','report','-i',f,'--no-children','--sort','symbol','-F','sample,sym','--percent-limit','0'],capture_output=True,text=True).stdout
    g = {}
    rules = [('parse (excluded)', r'TraceParser|parse_timestamp|memchr|from_chars|parse_clock|split_csv|commit_row|read_trace|strto|_copy_to_iter|read_file|getline|fast_float'),
             ('z-score sweep', r'pyramid_blocks|affine_clip_pyramid'),
             ('ACF windows + halve', r'centred_autocorrelation|highpass_interior|autocorrelation_avx2|autocorrelation_base|add_to_|halve_|subtract_moving_average|combined_acf|propose_periods|acf_'),
             ('timestamps + busy runs', r'time_sweep|busy_bits|runs_above|check_timestamps|all_inside'),
             ('block subsample (gather, line, residuals)', r'gather|robust_z_pyramid|memmove|subtract_line|abs_deviation'),
             ('flicker check', r'profile_amplitude|profile_resolved|smallest_step|signal::sum|toggles_between'),
             ('quantiles', r'quantile|bracket_|introsort|insertion_sort|nth_element|__adjust_heap|__heap_select|__move_median'),
             ('boundary matching', r'locate_boundaries'),
            ]
    for line in out.splitlines():
        m = re.match(r'\s*(\d+)\s+\[(.)\]\s+(.*)', line)
        if not m: continue
        n, sym = int(m.group(1)), m.group(3)
        name = 'other (detect_without, malloc, kernel, ...)'
        for k, r in rules:
            if re.search(r, sym): name = k; break
        g[name] = g.get(name, 0) + n
    return g
if len(sys.argv) < 2:
    print(__doc__)
    sys.exit(2)
res = [groups(f) for f in sys.argv[1:]]
keys = sorted(set(k for g in res for k in g), key=lambda k: -res[0].get(k,0))
tot = [sum(v for k, v in g.items() if not k.startswith('parse')) for g in res]
for k in keys:
    if k.startswith('parse'): continue
    print(f"{k:45s}", "  ".join(f"{g.get(k,0)/t*100:5.1f}% ({g.get(k,0):6d})" for g, t in zip(res, tot)))
print("detection samples", tot)
