#!/usr/bin/env python3
"""How low can cross-GPU MAPE go on the bundled dataset? Estimates the run-to-run noise that no
source feature can predict, and the MAPE an oracle that knows each workload's mean ratio would
still make because of it.

  /usr/bin/python3 bench/noise_floor.py [--oof FILE.npz]

The dataset has no repeated runs (no two rows with the same GPU, model, batch size and data
size), so the noise is estimated from smoothness: within one CNN model, GPU pair and data size,
the log ratio y = log(t_target / t_source) is a smooth function of log2(batch size) (16..256,
five equally spaced points). Residuals of a low-order polynomial fit, corrected for the degrees
of freedom it uses, estimate Var(noise_target - noise_source). Non-smooth true behaviour counts
as noise here, so these are upper bounds on the noise (and the floors are upper bounds too).
--oof: a .npz with arrays `pred` (log ratio) for the pair table's rows (written by
bench/compare_sklearn.py --save-oof) to split that model's error into noise and the rest.
"""
import argparse, os, sys
import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_sklearn import pair_table, ROOT, PriorStack, near_columns, splits  # noqa: E402


def ape_of_log(d):
    return np.abs(np.exp(d) - 1) * 100


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(ROOT, "data", "nvidiasmi_devicequery_all.csv"))
    ap.add_argument("--gpus", default=os.path.join(ROOT, "data", "gpus.csv"))
    ap.add_argument("--oof", help="npz with out-of-fold log-ratio predictions `pred` (cache; written by --protocol)")
    ap.add_argument("--protocol", choices=["lomo", "kfold", "logo"],
                    help="compute the scikit-learn stack's out-of-fold predictions (compare_sklearn.py's PriorStack) into --oof")
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()

    d = pd.read_csv(a.data)
    key = ["Instances", "model", "batchsize", "datasize"]
    print(f"runs {len(d)}; repeated (GPU, model, batch, data size) rows: {int(d.duplicated(key).sum())}")

    P = pair_table(a.data, a.gpus)
    P["_bs"] = P._workload.str.split("/").str[1].astype(int)
    P["_ds"] = P._workload.str.split("/").str[2].astype(int)
    P["_lb"] = np.log2(P._bs)
    y = P._y.to_numpy()
    print(f"pairs {len(P)}; MAPE of 'same time as the source' {ape_of_log(-0 * y + y).mean():.2f} % "
          f"(|exp(y)-1|, i.e. predicting ratio 1)")

    # Smooth fits of y along log2(batch) within (model, source, target, data size).
    for deg in (1, 2):
        rss, dof, npts = 0.0, 0, 0
        loo = np.full(len(P), np.nan)
        resid = np.full(len(P), np.nan)
        for _, g in P.groupby(["_model", "_source", "_target", "_ds"]):
            if len(g) < deg + 3:
                continue
            x, v = g._lb.to_numpy(), g._y.to_numpy()
            X = np.vander(x, deg + 1)
            beta, *_ = np.linalg.lstsq(X, v, rcond=None)
            r = v - X @ beta
            H = X @ np.linalg.pinv(X.T @ X) @ X.T
            # Residual scaled to unit leverage: E[r_i^2 / (1 - h_ii)] = sigma^2 under the model.
            resid[g.index] = r / np.sqrt(1 - np.diag(H))
            loo[g.index] = r / (1 - np.diag(H))  # leave-one-out residual (PRESS)
            rss += r @ r; dof += len(g) - (deg + 1); npts += len(g)
        ok = ~np.isnan(resid)
        s2 = rss / dof
        s_mad = 1.4826 * np.median(np.abs(resid[ok]))
        print(f"degree {deg} in log2(batch): {npts} pairs in {ok.sum()} fitted, residual dof {dof}; "
              f"sd of y-noise {np.sqrt(s2):.4f} (robust, MAD {s_mad:.4f}); per run "
              f"{np.sqrt(s2 / 2):.4f} ({s_mad / np.sqrt(2):.4f})")
        # Oracle that knows the mean ratio: its error is the noise itself. Empirical distribution
        # of the leverage-corrected residuals, and a normal with the MAD scale.
        print(f"   oracle MAPE (knows the mean ratio, sees noise of both runs): empirical "
              f"{ape_of_log(resid[ok]).mean():.2f} %, normal(MAD) "
              f"{ape_of_log(np.random.default_rng(0).normal(0, s_mad, 200000)).mean():.2f} %; "
              f"target run's noise only: {ape_of_log(resid[ok] / np.sqrt(2)).mean():.2f} % / "
              f"{ape_of_log(np.random.default_rng(0).normal(0, s_mad / np.sqrt(2), 200000)).mean():.2f} %")
        print(f"   leave-one-batch-out smooth interpolation from the same model's other batch sizes "
              f"on the same GPU pair (far more than lomo knows): MAPE {ape_of_log(loo[ok]).mean():.2f} %")
        if deg == 2:
            P["_resid"] = resid

    # Two-way additive fit y = alpha(data size) + beta(batch size) within (model, source, target).
    rss, dof = 0.0, 0
    res2 = []
    for _, g in P.groupby(["_model", "_source", "_target"]):
        X = pd.get_dummies(g._ds.astype(str)).join(pd.get_dummies(g._bs.astype(str), prefix="b").iloc[:, 1:]).to_numpy(float)
        if len(g) <= X.shape[1] + 2:
            continue
        beta, *_ = np.linalg.lstsq(X, g._y.to_numpy(), rcond=None)
        H = X @ np.linalg.pinv(X.T @ X) @ X.T
        r = g._y.to_numpy() - X @ beta
        res2.append(r / np.sqrt(np.clip(1 - np.diag(H), 1e-9, None)))
        rss += r @ r; dof += len(g) - np.linalg.matrix_rank(X)
    r = np.concatenate(res2)
    print(f"additive data size + batch size per (model, GPU pair): {len(r)} pairs, dof {dof}; sd of y-noise "
          f"{np.sqrt(rss / dof):.4f} (MAD {1.4826 * np.median(np.abs(r)):.4f}); oracle MAPE {ape_of_log(r).mean():.2f} %, "
          f"target run only {ape_of_log(r / np.sqrt(2)).mean():.2f} %")

    if a.protocol:
        feats = [c for c in P.columns if not c.startswith("_")]
        X = P[feats].to_numpy(float)
        prior = P["amdahl.memory_clock_split"].to_numpy()
        groups = (P._model.to_numpy(), P._source.to_numpy(), P._target.to_numpy(), P._workload.to_numpy())
        pred = np.full(len(P), np.nan)
        for train, test in splits(P, a.protocol, a.seed):
            train, test = train.to_numpy(), test.to_numpy()
            m = PriorStack(a.seed, near_columns(feats)).fit(X[train], y[train], prior[train], *(g[train] for g in groups))
            pred[test] = m.predict(X[test], prior[test], groups[1][test], groups[2][test])
        if a.oof:
            np.savez(a.oof, pred=pred)
    elif a.oof:
        pred = np.load(a.oof)["pred"]
    if a.oof or a.protocol:
        e = pred - y
        ok = ~np.isnan(e) & ~np.isnan(P._resid.to_numpy())
        mse = np.mean(e[ok] ** 2)
        noise2 = np.mean(P._resid.to_numpy()[ok] ** 2)
        print(f"out-of-fold model: MAPE {ape_of_log(e[~np.isnan(e)]).mean():.2f} % over {(~np.isnan(e)).sum()} pairs; "
              f"on the {ok.sum()} pairs with a noise estimate: MAPE {ape_of_log(e[ok]).mean():.2f} %, "
              f"mean squared log error {mse:.5f}, of which noise (both runs) {noise2:.5f} = "
              f"{100 * noise2 / mse:.0f} %, the target run's own noise {noise2 / 2:.5f} = {50 * noise2 / mse:.0f} %")
        # One effect per run, e(s->t) ~ c(s) - c(t): a run slower than its workload "should" be makes
        # pairs from it predicted too slow and pairs to it too fast (least squares over runs).
        runs = pd.Index(sorted(set(P._workload + "@" + P._source) | set(P._workload + "@" + P._target)))
        si = runs.get_indexer(P._workload + "@" + P._source)
        ti = runs.get_indexer(P._workload + "@" + P._target)
        m = ~np.isnan(e)
        A = np.zeros((m.sum(), len(runs)))
        A[np.arange(m.sum()), si[m]] = 1
        A[np.arange(m.sum()), ti[m]] = -1
        coef, *_ = np.linalg.lstsq(A, e[m], rcond=None)
        left = e[m] - A @ coef
        print(f"   per-run fit c(source) - c(target) ({len(runs)} runs) explains {100 * (1 - left.var() / e[m].var()):.0f} % "
              f"of the error variance; mean |e| {np.abs(e[m]).mean():.4f} -> {np.abs(left).mean():.4f}")
        # How much of the per-run effect is shared by the model's runs on that GPU (a behaviour of the
        # network the other networks do not show) rather than individual to the run.
        c = pd.Series(coef - coef.mean(), index=runs)
        parts = c.index.str.split("[/@]", regex=True)
        cdf = pd.DataFrame({"c": c.to_numpy(), "model": parts.str[0], "ds": parts.str[2], "gpu": parts.str[3]})
        for keys in (["model", "gpu"], ["model", "gpu", "ds"]):
            within = cdf.c - cdf.groupby(keys).c.transform("mean")
            print(f"   per-run effects: sd {cdf.c.std():.4f}; share of their variance explained by "
                  f"({', '.join(keys)}) means {100 * (1 - within.var() / cdf.c.var()):.0f} %")
        print(f"   pairs sorted by |noise estimate|: MAPE on the 80 % quietest "
              f"{ape_of_log(e[ok][np.abs(P._resid.to_numpy()[ok]) <= np.quantile(np.abs(P._resid.to_numpy()[ok]), 0.8)]).mean():.2f} %")


if __name__ == "__main__":
    sys.exit(main())
