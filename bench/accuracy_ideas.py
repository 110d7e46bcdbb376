#!/usr/bin/env python3
"""Prototype harness behind docs/journal/model.md "Not kept (second round)": the scikit-learn stack of
compare_sklearn.py with its inner out-of-fold matrices cached per outer fold, so meta-learner
variants (NNLS, LAD, mean-APE) cost nothing; --features base|eff|eff2|eff3 adds candidate
columns to the pair table (none of them in the default model: docs/journal/model.md, "Eight more
source-run columns"), WINS=q winsorises the learners' target. Caches under /tmp/acc/.
  mkdir -p /tmp/acc; /usr/bin/python3 bench/accuracy_ideas.py --protocol lomo --features eff3
"""
# Prototype harness: caches per-outer-fold inner OOF matrices so meta variants are cheap.
import os, sys, pickle, argparse
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np, pandas as pd
from compare_sklearn import pair_table, base_learners, near_columns, splits
from sklearn.base import clone
from sklearn.model_selection import GroupKFold
from scipy.optimize import nnls, linprog

def add_features(P, variant):
    P = P.copy()
    if variant in ("eff", "eff_prior", "eff2", "eff3"):
        u = (P["src.utilization_gpu_mean"] / 100).clip(0.01, 1)
        pmin = P["src.power_drawW_min"]
        tdp = np.exp(P["src.log_tdp_w"])
        P["src.power_activity"] = ((P["src.power_drawW_mean"] - pmin) / (tdp - pmin)).clip(0, 1)
        P["src.power_activity_per_busy"] = P["src.power_activity"] / u
        P["src.mem_over_busy"] = (P["src.utilization_memory_mean"] / 100) / u
        P["src.busy_iqr"] = (P["src.utilization_gpu_75"] - P["src.utilization_gpu_25"]) / 100
    if variant == "eff3":
        u = (P["src.utilization_gpu_mean"] / 100).clip(0.01)
        m = (P["src.utilization_memory_mean"] / 100).clip(0.01)
        P["src.compute_work"] = P["src.log_epoch_s"] + np.log(u) + P["src.log_fp32_tflops"]
        P["src.memory_work"] = P["src.log_epoch_s"] + np.log(m) + P["src.log_memory_bandwidth_gbs"]
        P["src.clock_min_over_mean"] = P["src.clocks_current_smMHz_min"] / P["src.clocks_current_smMHz_mean"]
    if variant in ("eff2", "eff3"):
        P["src.power_burst"] = P["src.power_drawW_max"] / P["src.power_drawW_mean"]
        P["src.busy_cv"] = P["src.utilization_gpu_std"] / P["src.utilization_gpu_mean"].clip(1)
        P["src.busy_seconds"] = P["src.log_epoch_s"] + np.log((P["src.utilization_gpu_mean"] / 100).clip(0.01))
        P["src.idle_seconds"] = P["src.log_epoch_s"] + np.log((1 - P["src.utilization_gpu_mean"] / 100).clip(0.01))
    if variant == "eff_prior":
        # Busy-but-not-memory share split by SM activity (power per busy share): active part scales
        # with FP32, the latency-bound rest with the SM clock.
        u = (P["src.utilization_gpu_mean"] / 100).clip(0, 1)
        m = np.minimum(P["src.utilization_memory_mean"] / 100, u).clip(0, 1)
        act = (P["src.power_drawW_mean"] / np.exp(P["src.log_tdp_w"]) / u.clip(0.01)).clip(0, 1)
        bw = np.exp(P["ratio.log_memory_bandwidth_gbs"]); fp = np.exp(P["ratio.log_fp32_tflops"])
        clk = np.exp(P["ratio.log_max_sm_clock_mhz"])
        P["amdahl.activity_split"] = np.log(m / bw + (u - m) * (act / fp + (1 - act) / clk) + 1 - u)
    return P

def fit_all(X, r, seed, sel):
    return [clone(est).fit(X, r) for i, (_, est) in enumerate(base_learners(seed, COLS, "linear")) if i in sel]  # format 3's stack

def pred_all(ms, X, lo, hi):
    return np.column_stack([np.clip(m.predict(X), lo, hi) for m in ms])

COLS = None  # kNN columns, set by outer()
WINS = float(os.environ.get("WINS", "0"))
def outer(P, feats, protocol, seed, sel=(0, 1, 2, 3)):
    global COLS
    COLS = near_columns(feats)
    X, y = P[feats].to_numpy(float), P._y.to_numpy()
    prior = P["amdahl.activity_split" if "amdahl.activity_split" in P else "amdahl.memory_clock_split"].to_numpy()
    models, sources, targets = P._model.to_numpy(), P._source.to_numpy(), P._target.to_numpy()
    out = []
    for tr, te in splits(P, protocol, seed):
        tr, te = np.where(tr.to_numpy())[0], np.where(te.to_numpy())[0]
        r = y[tr] - prior[tr]
        lo, hi = r.min() - 0.1 * (r.max() - r.min()), r.max() + 0.1 * (r.max() - r.min())
        Xt = X[tr]
        r_true = r.copy()
        if WINS > 0:
            r = np.clip(r, *np.quantile(r, [WINS, 1 - WINS]))
        rows, oof, kinds = [], [], []
        for a, b in GroupKFold(n_splits=min(5, len(np.unique(models[tr])))).split(Xt, groups=models[tr]):
            rows.append(b); oof.append(pred_all(fit_all(Xt[a], r[a], seed, sel), Xt[b], lo, hi)); kinds.append(np.zeros(len(b)))
        for g in np.unique(targets[tr]):
            a = (sources[tr] != g) & (targets[tr] != g); b = targets[tr] == g
            rows.append(np.where(b)[0]); oof.append(pred_all(fit_all(Xt[a], r[a], seed, sel), Xt[b], lo, hi)); kinds.append(np.ones(b.sum()))
        idx = np.concatenate(rows)
        final = pred_all(fit_all(Xt, r, seed, sel), X[te], lo, hi)
        out.append(dict(te=te, A=np.vstack(oof), b=r_true[idx], kind=np.concatenate(kinds), tgt=targets[tr][idx],
                        final=final, prior_te=prior[te]))
    return out

def meta_nnls(A, b, **k): return nnls(A, b)[0]
def meta_lad(A, b, **k):
    # min sum |A w - b|, w >= 0: LP with slack.
    n, p = A.shape
    c = np.concatenate([np.zeros(p), np.ones(n)])
    Aub = np.block([[A, -np.eye(n)], [-A, -np.eye(n)]])
    bub = np.concatenate([b, -b])
    res = linprog(c, A_ub=Aub, b_ub=bub, bounds=[(0, None)] * (p + n), method="highs")
    return res.x[:p]
def meta_ape(A, b, **k):
    # minimise the metric itself: mean |exp(A w - b) - 1| (IRLS on L1 start)
    from scipy.optimize import minimize
    w0 = meta_lad(A, b)
    f = lambda w: np.mean(np.abs(np.expm1(A @ w - b)))
    return minimize(f, w0, bounds=[(0, None)] * A.shape[1], method="Powell").x

def score(P, res, meta, y=None):
    y = P._y.to_numpy()
    pred = np.full(len(P), np.nan)
    ws = []
    for f in res:
        w = meta(f["A"], f["b"])
        ws.append(w)
        pred[f["te"]] = f["prior_te"] + f["final"] @ w
    ape = np.abs(np.expm1(pred - y)) * 100
    per = pd.Series(ape).groupby(P._target.to_numpy()).mean()
    return ape.mean(), per, np.mean(ws, axis=0)

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--protocol", default="lomo"); ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--features", default="base")
    a = ap.parse_args()
    P = add_features(pair_table(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "nvidiasmi_devicequery_all.csv"), os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "gpus.csv")), a.features)
    feats = [c for c in P.columns if not c.startswith("_")]
    cache = f"/tmp/acc/res_{a.protocol}_{a.seed}_{a.features}_w{WINS}.pkl"
    if os.path.exists(cache): res = pickle.load(open(cache, "rb"))
    else:
        res = outer(P, feats, a.protocol, a.seed); pickle.dump(res, open(cache, "wb"))
    for name, m in [("nnls", meta_nnls), ("lad", meta_lad), ("ape", meta_ape)]:
        mape, per, w = score(P, res, m)
        print(f"{a.protocol} seed {a.seed} feats {a.features} meta {name}: MAPE {mape:.2f} per-target {per.round(2).to_dict()} w {np.round(w, 3)}")
