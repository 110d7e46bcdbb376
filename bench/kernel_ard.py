#!/usr/bin/env python3
"""Prototype behind docs/journal/model.md "ARD kernel ridge, measured and not kept": kernel ridge alone
(the C++ learner's Nystrom basis of 256 rows, kNN columns, length scale / lambda grid by CV grouped
by --inner), isotropic ("iso") against per-column weights ("cvN": N greedy passes over the
columns, each weight x0 / x0.5 / x2 kept when the grouped-CV error drops). Prints MAPE of
prior + clamped correction per protocol and the mean column weights.
  /usr/bin/python3 bench/kernel_ard.py --protocol lomo --mode iso,cv1 [--inner model|workload]
"""
import os, sys, time, argparse, warnings
warnings.filterwarnings("ignore")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np, pandas as pd
from compare_sklearn import pair_table, splits
R = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
P = pair_table(f"{R}/data/nvidiasmi_devicequery_all.csv", f"{R}/data/gpus.csv")
cols = [c for c in P.columns if c.startswith("amdahl.") or c.startswith("ratio.")] + ["src.log_epoch_s","src.power_mean_over_tdp","src.sm_clock_mean_over_max","src.utilization_gpu_mean","src.utilization_memory_mean"]
X = P[cols].to_numpy(float); y = P._y.to_numpy(); prior = P["amdahl.memory_clock_split"]  # compare_sklearn.py's pair table: the format-4 prior.to_numpy()
models = P._model.to_numpy()
SG = [0.25, 0.5, 1, 2]; LG = [0.001, 0.01, 0.1, 1]

class Tuner:
    """C++ tune_kernel_ridge: one basis from all rows, folds grouped by model round-robin."""
    def __init__(s, Z, r, g, seed, m=256):
        rng = np.random.default_rng(seed); s.b = np.sort(rng.choice(len(Z), min(m, len(Z)), replace=False))
        s.D = (Z[:, None, :] - Z[s.b][None]) ** 2  # n×m×d
        s.r = r - r.mean()
        u = np.unique(g); s.fold = np.searchsorted(u, g) % min(5, len(u)); s.k = s.fold.max() + 1
    def sse(s, w, ls, lams):
        d2 = s.D @ (w ** 2)
        K = np.exp(-0.5 * d2 / ls**2); Kmm = K[s.b] + 1e-6 * np.eye(len(s.b))
        parts = [(K[s.fold == f], s.r[s.fold == f]) for f in range(s.k)]
        A = sum(k.T @ k for k, _ in parts); B = sum(k.T @ y for k, y in parts)
        out = []
        for lam in lams:
            e = 0
            for k, yy in parts:
                al = np.linalg.solve(A - k.T @ k + lam * Kmm, B - k.T @ yy); e += ((yy - k @ al) ** 2).sum()
            out.append(e)
        return np.array(out)
    def tune(s, w):
        d = np.sqrt(len(w)); best = (np.inf, None)
        for rel in SG:
            e = s.sse(w, rel * d, LG); i = e.argmin()
            if e[i] < best[0]: best = (e[i], (rel * d, LG[i]))
        return best

def cv_weights(T, d, passes):
    w = np.ones(d); best, (ls, lam) = T.tune(w)
    for p in range(passes):
        for c in range(d):
            for f in (0.0, 0.5, 2.0):
                w2 = w.copy(); w2[c] *= f
                e = T.sse(w2, ls, [lam])[0]
                if e < best: best, w = e, w2
        best, (ls, lam) = T.tune(w)
    return w, ls, lam

def fit_pred(Zt, r, Zte, w, ls, lam, seed, m=256):
    rng = np.random.default_rng(seed); b = np.sort(rng.choice(len(Zt), min(m, len(Zt)), replace=False))
    B = Zt[b] * w
    K = np.exp(-0.5 * (((Zt * w)[:, None] - B[None]) ** 2).sum(-1) / ls**2); Kmm = K[b] + 1e-6 * np.eye(len(b))
    mu = r.mean(); al = np.linalg.solve(K.T @ K + lam * Kmm, K.T @ (r - mu))
    Kt = np.exp(-0.5 * (((Zte * w)[:, None] - B[None]) ** 2).sum(-1) / ls**2)
    return mu + Kt @ al

ap = argparse.ArgumentParser(); ap.add_argument("--protocol", default="lomo"); ap.add_argument("--seed", type=int, default=42)
ap.add_argument("--mode", default="iso,cv1"); ap.add_argument("--inner", default="model"); a = ap.parse_args()
for mode in a.mode.split(","):
    pred = np.full(len(P), np.nan); t0 = time.time(); W = []
    for tr, te in splits(P, a.protocol, a.seed):
        tr, te = np.where(tr.to_numpy())[0], np.where(te.to_numpy())[0]
        mu, sd = np.nanmean(X[tr], 0), np.nanstd(X[tr], 0); sd[sd < 1e-12] = 1
        Z = np.nan_to_num((X - mu) / sd); r = y[tr] - prior[tr]
        T = Tuner(Z[tr], r, (models if a.inner == "model" else P._workload.to_numpy())[tr], a.seed)
        if mode == "iso": w = np.ones(len(cols)); _, (ls, lam) = T.tune(w)
        else: w, ls, lam = cv_weights(T, len(cols), int(mode[2:]))
        W.append(w)
        lo, hi = r.min() - 0.1 * np.ptp(r), r.max() + 0.1 * np.ptp(r)
        pred[te] = prior[te] + np.clip(fit_pred(Z[tr], r, Z[te], w, ls, lam, a.seed), lo, hi)
    ape = np.abs(np.expm1(pred - y)) * 100
    print(a.protocol, a.seed, mode, f"MAPE {ape.mean():.2f}", pd.Series(ape).groupby(P._target.to_numpy()).mean().round(2).to_dict(), f"{time.time()-t0:.0f}s", flush=True)
    if mode != "iso": print("  mean w", dict(zip([c.split('.',1)[1][:12] for c in cols], np.round(np.mean(W, 0), 2))), flush=True)
