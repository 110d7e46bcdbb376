#!/usr/bin/env python3
"""Where the held-out error is (docs/journal/model.md, "Error analysis"): absolute percentage error of
out-of-fold predictions by held-out CNN, GPU pair, batch size, image size and how busy the source
run is; which pairs carry half of the error; and whether anything in the source run's metrics
predicts them (per-feature AUC for the worst 10 %, and the per-run effect c(run) of
e(s->t) = c(s) - c(t) regressed on the run's own columns with folds grouped by CNN model).

  /usr/bin/python3 bench/noise_floor.py --protocol lomo --oof /tmp/oof_lomo.npz   # writes the OOF
  /usr/bin/python3 bench/error_analysis.py --oof /tmp/oof_lomo.npz [--markdown]
  /usr/bin/python3 bench/error_analysis.py --self-test   # planted run effects are recovered

The .npz holds `pred` (log ratio) for compare_sklearn.pair_table()'s rows, in its order.
"""
import argparse, os, sys
import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_sklearn import pair_table, ROOT  # noqa: E402
from sklearn.ensemble import ExtraTreesRegressor  # noqa: E402
from sklearn.impute import SimpleImputer  # noqa: E402
from sklearn.linear_model import RidgeCV  # noqa: E402
from sklearn.model_selection import GroupKFold  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402


def auc(score, label):
    """Mann-Whitney AUC of `score` for the positive class (NaN scores dropped)."""
    ok = np.isfinite(score)
    s, l = score[ok], label[ok]
    r = pd.Series(s).rank().to_numpy()
    n1, n0 = l.sum(), (~l).sum()
    return (r[l].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)


def table(P, key, name, md):
    g = P.groupby(key).agg(pairs=("ape", "size"), mape=("ape", "mean"), median=("ape", "median"),
                           share=("ape", "sum"), bias=("err", "mean"))
    g["share"] = 100 * g["share"] / P.ape.sum()
    g["bias"] = 100 * g["bias"]
    print(f"\n{name}: pairs, MAPE %, median APE %, share of total APE %, mean signed log error x100")
    g = g.round(2)
    if md:
        print("| " + " | ".join([str(key)] + list(g.columns)) + " |")
        print("|" + "---|" * (len(g.columns) + 1))
        for k, row in g.iterrows():
            print("| " + " | ".join([str(k)] + [f"{v:g}" for v in row]) + " |")
    else:
        print(g.to_string())


def per_run_effect(P):
    """Least-squares c(run) with e = c(source) - c(target). Runs pair only within a workload, so c
    is defined up to one constant per workload; the minimum-norm solution centres it there."""
    runs = pd.Index(pd.unique(pd.concat([P._srun, P._trun])))
    s, t = runs.get_indexer(P._srun), runs.get_indexer(P._trun)
    A = np.zeros((len(P), len(runs)))
    A[np.arange(len(P)), s] = 1
    A[np.arange(len(P)), t] = -1
    c = np.linalg.lstsq(A, P.err.to_numpy(), rcond=None)[0]
    return runs, c, c[s] - c[t]


def self_test():
    """The decomposition recovers planted run effects (and the AUC is the textbook one)."""
    rng = np.random.default_rng(1)
    runs = [f"{g}|w{w}" for g in "abcd" for w in range(30)]
    c = pd.Series(rng.normal(0, 0.05, len(runs)), index=runs)
    c -= c.groupby(c.index.str.split("|").str[1]).transform("mean")  # the identifiable part
    rows = [(f"{s}|w{w}", f"{t}|w{w}") for w in range(30) for s in "abcd" for t in "abcd" if s != t]
    P = pd.DataFrame(rows, columns=["_srun", "_trun"])
    P["err"] = P._srun.map(c).to_numpy() - P._trun.map(c).to_numpy()
    got_runs, got, fitted = per_run_effect(P)
    assert np.allclose(pd.Series(got, index=got_runs).loc[runs].to_numpy(), c.to_numpy(), atol=1e-9)
    assert np.allclose(fitted, P.err, atol=1e-9)
    assert abs(auc(np.array([1.0, 2, 3, 4]), np.array([False, False, True, True])) - 1) < 1e-12
    assert abs(auc(np.array([1.0, 2, 3, 4]), np.array([True, False, False, True])) - 0.5) < 1e-12
    print("self-test ok")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--oof")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.oof:
        ap.error("--oof FILE.npz is required (or --self-test)")
    P = pair_table(os.path.join(ROOT, "data", "nvidiasmi_devicequery_all.csv"), os.path.join(ROOT, "data", "gpus.csv"))
    P["pred"] = np.load(a.oof)["pred"]
    P["err"] = P.pred - P._y                      # log error, > 0: predicted too slow
    P["ape"] = np.abs(np.expm1(P.err)) * 100
    P["_bs"] = P._workload.str.split("/").str[1].astype(int)
    P["_ds"] = P._workload.str.split("/").str[2].astype(int)
    P["_srun"] = P._source + "|" + P._workload
    P["_trun"] = P._target + "|" + P._workload
    P["_pair"] = P._source + "->" + P._target
    u = P["src.utilization_gpu_mean"]
    P["_busy"] = pd.cut(u, [-1, 30, 60, 85, 101], labels=["<30", "30-60", "60-85", ">=85"])
    print(f"pairs {len(P)}, MAPE {P.ape.mean():.2f} %")
    for key, name in [("_model", "held-out CNN"), ("_pair", "source -> target"), ("_bs", "batch size"),
                      ("_ds", "image size"), ("_busy", "source utilization.gpu mean %")]:
        table(P, key, name, a.markdown)

    ape = np.sort(P.ape.to_numpy())[::-1]
    cum = np.cumsum(ape) / ape.sum()
    k10 = int(np.ceil(0.1 * len(ape)))
    print(f"\nworst 10 % of pairs ({k10}) carry {100 * cum[k10 - 1]:.1f} % of the total APE; "
          f"half of it is in the worst {100 * (np.searchsorted(cum, 0.5) + 1) / len(ape):.1f} % "
          f"({np.searchsorted(cum, 0.5) + 1} pairs); MAPE without the worst 10 %: {ape[k10:].mean():.2f} %")
    worst = P.ape.to_numpy() >= ape[k10 - 1]
    W = P[worst]
    print("worst 10 % by held-out CNN:", W._model.value_counts().to_dict())
    print("worst 10 % by pair:", W._pair.value_counts().to_dict())
    print("worst 10 % by source busy:", W._busy.value_counts().to_dict(),
          f"; predicted too slow (err > 0): {(W.err > 0).mean() * 100:.0f} %")
    src_cols = [c for c in P.columns if c.startswith(("src.", "amdahl.")) and not c.startswith("src.log_") or c == "src.log_epoch_s"]
    aucs = sorted(((abs(auc(P[c].to_numpy(float), worst) - 0.5) + 0.5, c) for c in src_cols), reverse=True)
    print("source columns that best separate the worst 10 % (AUC, either direction):",
          ", ".join(f"{c} {v:.2f}" for v, c in aucs[:6]))

    runs, c, fitted = per_run_effect(P)
    r2 = 1 - np.var(P.err - fitted) / np.var(P.err)
    print(f"\nper-run effect e(s->t) = c(s) - c(t): explains {100 * r2:.0f} % of the log-error variance; "
          f"mean |e| {P.err.abs().mean():.4f} -> residual {np.abs(P.err - fitted).mean():.4f}; "
          f"sd of c {c.std():.4f}")
    # Is c(run) observable in the run's own metrics? Regress it on the run's columns (as a source),
    # folds grouped by CNN model (as lomo), extra trees.
    R = P.drop_duplicates("_srun").set_index("_srun")
    R = R.loc[R.index.intersection(runs)]
    cols = [k for k in P.columns if k.startswith("src.")]
    X = R[cols].to_numpy(float)
    cy = pd.Series(c, index=runs).loc[R.index].to_numpy()
    for name, est in [("ridge", make_pipeline(SimpleImputer(), StandardScaler(), RidgeCV(np.logspace(-1, 4, 12)))),
                      ("extra trees", make_pipeline(SimpleImputer(), ExtraTreesRegressor(
                          200, min_samples_leaf=10, max_features=0.3, random_state=0)))]:
        for group in ("_model", "_workload"):
            pred = np.zeros(len(R))
            for tr, te in GroupKFold(5).split(X, groups=R[group]):
                pred[te] = est.fit(X[tr], cy[tr]).predict(X[te])
            print(f"c(run) predicted from the run's own {len(cols)} columns ({name}, 5 folds grouped by "
                  f"{group[1:]}): R^2 {1 - np.mean((cy - pred) ** 2) / np.var(cy):.3f} over {len(R)} runs")
    # What knowing a run's effect would be worth (an oracle, not reachable from the metrics).
    cs = pd.Series(c, index=runs)
    s, t, y, p = P._srun.map(cs).to_numpy(), P._trun.map(cs).to_numpy(), P._y.to_numpy(), P.pred.to_numpy()
    mape = lambda q: np.mean(np.abs(np.expm1(q - y))) * 100
    print(f"oracle MAPE if c(source) were known {mape(p - s):.2f} %, c(target) {mape(p + t):.2f} %, both {mape(p - s + t):.2f} %")
    # Loss shape: the best constant log offset and correction scale chosen on these very errors
    # (an optimistic bound on what a MAPE-shaped loss or a shrunk/median meta could gain).
    prior = P["amdahl.memory_clock_split"].to_numpy()
    offs = np.linspace(-0.04, 0.04, 81)
    best = min(offs, key=lambda d: mape(p + d))
    scales = np.linspace(0.5, 1.5, 101)
    bests = min(scales, key=lambda k: mape(prior + k * (p - prior)))
    bins = np.digitize(P["src.utilization_gpu_mean"].to_numpy(), [30, 60, 85])
    q = p.copy()
    for b in range(4):
        m = bins == b
        q[m] += min(offs, key=lambda d: np.mean(np.abs(np.expm1(p[m] + d - y[m]))))
    print(f"oracle offset {best:+.3f}: {mape(p + best):.2f} %; per busy bin: {mape(q):.2f} %; "
          f"correction x{bests:.2f}: {mape(prior + bests * (p - prior)):.2f} % (now {mape(p):.2f} %)")
    by = pd.DataFrame({"c": cy, "gpu": R._source.to_numpy(), "model": R._model.to_numpy()})
    print("sd of c by GPU:", by.groupby("gpu").c.std().round(4).to_dict())
    print("mean c by GPU:", by.groupby("gpu").c.mean().round(4).to_dict())


if __name__ == "__main__":
    main()
