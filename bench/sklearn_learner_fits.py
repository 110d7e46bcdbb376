#!/usr/bin/env python3
# python3 bench/sklearn_learner_fits.py [kernel|linear]; the epochcast side: build/bench/model_bench --benchmark_filter=BM_LearnerFitAllPairs
# CPU seconds of each scikit-learn learner's fit on all 1,516 pairs (as compare_sklearn.py builds them), best of 3.
import os, sys, time
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import numpy as np
from compare_sklearn import pair_table, base_learners, near_columns
from sklearn.base import clone
P = pair_table("data/nvidiasmi_devicequery_all.csv", "data/gpus.csv")
feats = [c for c in P.columns if not c.startswith("_")]
X, y = P[feats].to_numpy(float), P._y.to_numpy()
stack = sys.argv[1] if len(sys.argv) > 1 else "kernel"  # or linear: format 3's
for name, est in base_learners(42, near_columns(feats), stack):
    walls, cpus = [], []
    for _ in range(3):
        t, c = time.perf_counter(), time.process_time(); clone(est).fit(X, y)
        walls.append(time.perf_counter() - t); cpus.append(time.process_time() - c)
    print(f"{name:12} wall {min(walls)*1000:7.1f} ms  CPU {min(cpus)*1000:7.1f} ms")
