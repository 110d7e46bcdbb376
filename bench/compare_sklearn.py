#!/usr/bin/env python3
"""Side-by-side: epochcast's stack vs the equivalent scikit-learn StackingRegressor.

Same dataset, same pairs (same workload on two GPU types), same features (the pair features
of src/model/pair_features.cpp, recomputed here from data/gpus.csv), same target
log(target/source epoch time), same protocol, in the same run. Prints MAPE and fit time for
both and their ratio.

  python3 bench/compare_sklearn.py --cli build/epochcast [--protocol lomo|kfold|logo]

scikit-learn has no XGBoost here (Debian ships none for Python), so its gradient boosting
stands in: HistGradientBoostingRegressor. As in epochcast, the learners fit the correction to the
Amdahl prior (amdahl.memory_split), clamped to its training range widened by 10 %, and the meta
learner is a non-negative linear regression (no intercept) on out-of-fold predictions from folds
grouped by CNN model plus folds holding each target GPU out of both sides. StackingRegressor
cannot take two fold sets, so the stacking is written out with scikit-learn's own estimators.
"""
import argparse, json, os, subprocess, sys, time

# One OpenMP thread: on a shared 2-core machine spinning OpenMP workers slow scikit-learn down
# badly (epochcast runs XGBoost with one thread for the same reason); set before sklearn loads.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.ensemble import ExtraTreesRegressor, HistGradientBoostingRegressor
from sklearn.linear_model import LinearRegression, RidgeCV
from sklearn.model_selection import GroupKFold
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.impute import SimpleImputer
from sklearn.preprocessing import StandardScaler

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATS = ["mean", "std", "min", "25", "50", "75", "max"]
METRICS = ["utilization_gpu", "utilization_memory", "power_drawW", "clocks_current_smMHz", "temperature_gpu"]
SPECS = ["fp32_tflops", "tensor_fp16_tflops", "memory_bandwidth_gbs", "sm_count", "max_sm_clock_mhz",
         "l2_cache_mib", "memory_gib", "tdp_w"]
AMDAHL = ["fp32_tflops", "tensor_fp16_tflops", "memory_bandwidth_gbs", "sm_count", "max_sm_clock_mhz"]


def pair_table(data_csv, gpus_csv):
    d = pd.read_csv(data_csv)
    g = pd.read_csv(gpus_csv)
    label_to_gpu = {}
    for _, row in g.iterrows():
        for label in str(row.dataset_labels).split(";"):
            if label and label != "nan":
                label_to_gpu[label.strip()] = row
    d["workload"] = d["model"] + "/" + d["batchsize"].astype(str) + "/" + d["datasize"].astype(str)
    rows = []
    for _, grp in d.groupby("workload", sort=False):
        recs = grp.to_dict("records")
        for s in recs:
            for t in recs:
                if s["Instances"] == t["Instances"]:
                    continue
                sg, tg = label_to_gpu[s["Instances"]], label_to_gpu[t["Instances"]]
                f = {f"src.{m}_{st}": s[f"{m}_{st}"] for m in METRICS for st in STATS}
                f["src.log_epoch_s"] = np.log(s["one_epoch_average_second"])
                f["src.power_mean_over_tdp"] = s["power_drawW_mean"] / sg.tdp_w
                f["src.sm_clock_mean_over_max"] = s["clocks_current_smMHz_mean"] / sg.max_sm_clock_mhz
                busy = min(1, max(0, s["utilization_gpu_mean"] / 100))
                mem = min(1, max(0, s["utilization_memory_mean"] / 100))
                floor_w = s["power_drawW_min"]
                act = min(1, max(0, (s["power_drawW_mean"] - floor_w) / (sg.tdp_w - floor_w))) if sg.tdp_w > floor_w else np.nan
                f["src.power_activity"], f["src.power_activity_per_busy"] = act, act / max(busy, 0.01)
                f["src.mem_busy_over_busy"] = mem / max(busy, 0.01)
                f["src.busy_iqr"] = (s["utilization_gpu_75"] - s["utilization_gpu_25"]) / 100
                f["src.power_max_over_mean"] = s["power_drawW_max"] / s["power_drawW_mean"]
                f["src.busy_cv"] = s["utilization_gpu_std"] / max(s["utilization_gpu_mean"], 1)
                f["src.log_busy_s"] = np.log(s["one_epoch_average_second"]) + np.log(max(busy, 0.01))
                f["src.log_idle_s"] = np.log(s["one_epoch_average_second"]) + np.log(max(1 - busy, 0.01))
                for k in SPECS:
                    f[f"src.log_{k}"] = np.log(sg[k]); f[f"tgt.log_{k}"] = np.log(tg[k])
                    f[f"ratio.log_{k}"] = np.log(tg[k] / sg[k])
                for k in AMDAHL:
                    f[f"amdahl.{k}"] = np.log(busy / (tg[k] / sg[k]) + 1 - busy)
                comp, bw = tg.fp32_tflops / sg.fp32_tflops, tg.memory_bandwidth_gbs / sg.memory_bandwidth_gbs
                f["amdahl.fp32_and_bandwidth"] = np.log(busy / np.sqrt(comp * bw) + 1 - busy)
                other = max(0.0, busy - mem)
                f["amdahl.memory_split"] = np.log(mem / bw + other / comp + 1 - mem - other)
                f["_y"] = np.log(t["one_epoch_average_second"] / s["one_epoch_average_second"])
                f["_model"], f["_workload"] = s["model"], s["workload"]
                f["_source"], f["_target"] = sg.id, tg.id
                f["_src_s"], f["_tgt_s"] = s["one_epoch_average_second"], t["one_epoch_average_second"]
                rows.append(f)
    return pd.DataFrame(rows)


def base_learners(seed):
    return [
        ("gbm", HistGradientBoostingRegressor(max_iter=150, learning_rate=0.1, max_depth=4, random_state=seed)),
        ("ridge", make_pipeline(SimpleImputer(), StandardScaler(), RidgeCV(alphas=np.logspace(-2, 3, 10)))),
        ("knn", make_pipeline(SimpleImputer(), StandardScaler(), KNeighborsRegressor(7, weights="distance"))),
        ("extra_trees", make_pipeline(SimpleImputer(strategy="median"),
                                      ExtraTreesRegressor(100, min_samples_leaf=2, max_features=0.5,
                                                          random_state=seed, n_jobs=2))),
    ]


class PriorStack:
    """epochcast's stack with scikit-learn parts: learners fit y - prior, meta on two fold sets."""

    def __init__(self, seed):
        self.seed = seed

    def _fit_all(self, X, r):
        return [clone(est).fit(X, r) for _, est in base_learners(self.seed)]

    def _predict_all(self, models, X):
        return np.column_stack([np.clip(m.predict(X), self.lo, self.hi) for m in models])

    def fit(self, X, y, prior, models, sources, targets):
        r = y - prior
        span = r.max() - r.min()
        self.lo, self.hi = r.min() - 0.1 * span, r.max() + 0.1 * span
        rows, oof = [], []
        groups = np.unique(models)
        for tr, te in GroupKFold(n_splits=min(5, len(groups))).split(X, groups=models):
            rows.append(te); oof.append(self._predict_all(self._fit_all(X[tr], r[tr]), X[te]))
        if len(np.unique(targets)) >= 3:
            for g in np.unique(targets):
                tr = (sources != g) & (targets != g)
                te = targets == g
                if tr.any():
                    rows.append(np.where(te)[0])
                    oof.append(self._predict_all(self._fit_all(X[tr], r[tr]), X[te]))
        idx = np.concatenate(rows)
        meta = LinearRegression(positive=True, fit_intercept=False).fit(np.vstack(oof), r[idx])
        self.weights = meta.coef_
        self.models = self._fit_all(X, r)
        return self

    def predict(self, X, prior):
        return prior + self._predict_all(self.models, X) @ self.weights


def splits(P, protocol, seed):
    if protocol == "lomo":
        for m in sorted(P._model.unique()):
            yield P._model != m, P._model == m
    elif protocol == "logo":
        for g in sorted(P._target.unique()):
            yield (P._source != g) & (P._target != g), P._target == g
    else:
        w = np.array(sorted(P._workload.unique()))
        np.random.default_rng(seed).shuffle(w)
        fold = {x: i % 5 for i, x in enumerate(w)}
        f = P._workload.map(fold)
        for k in range(5):
            yield f != k, f == k


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "apps", "cli", "epochcast"))
    ap.add_argument("--data", default=os.path.join(ROOT, "data", "nvidiasmi_devicequery_all.csv"))
    ap.add_argument("--gpus", default=os.path.join(ROOT, "data", "gpus.csv"))
    ap.add_argument("--protocol", default="lomo", choices=["lomo", "kfold", "logo"])
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()

    P = pair_table(a.data, a.gpus)
    feats = [c for c in P.columns if not c.startswith("_")]
    X, y = P[feats].to_numpy(float), P._y.to_numpy()
    print(f"{len(P)} pairs, {len(feats)} features, protocol {a.protocol}")

    # scikit-learn: one fit on all pairs (timed), then the protocol.
    t0 = time.perf_counter()
    # The prior with epochcast's fallbacks for missing utilisation channels (none in this data).
    prior = P["amdahl.memory_split"].fillna(P["amdahl.fp32_and_bandwidth"]).fillna(
        -0.5 * (P["ratio.log_fp32_tflops"] + P["ratio.log_memory_bandwidth_gbs"])).to_numpy()
    groups = (P._model.to_numpy(), P._source.to_numpy(), P._target.to_numpy())
    PriorStack(a.seed).fit(X, y, prior, *groups)
    sk_fit_s = time.perf_counter() - t0
    pred = np.full(len(P), np.nan)
    sk_protocol_s = 0.0
    for train, test in splits(P, a.protocol, a.seed):
        train, test = train.to_numpy(), test.to_numpy()
        t0 = time.perf_counter()
        m = PriorStack(a.seed).fit(X[train], y[train], prior[train], *(g[train] for g in groups))
        sk_protocol_s += time.perf_counter() - t0
        pred[test] = m.predict(X[test], prior[test])
    ok = ~np.isnan(pred)
    ape = np.abs(np.exp(pred[ok]) - np.exp(y[ok])) / np.exp(y[ok]) * 100
    sk_mape = ape.mean()

    # epochcast, same run.
    t0 = time.perf_counter()
    fit = json.loads(subprocess.run([a.cli, "fit", "--data", a.data, "--catalog", a.gpus, "-o", "/tmp/compare_sklearn.model.json",
                                     "--seed", str(a.seed), "--json"], check=True, capture_output=True, text=True).stdout)
    ec_fit_wall_s = time.perf_counter() - t0
    ev = json.loads(subprocess.run([a.cli, "eval", "--data", a.data, "--catalog", a.gpus, "--protocol", a.protocol,
                                    "--seed", str(a.seed), "--json"], check=True, capture_output=True, text=True).stdout)

    print(f"{'':<14} {'MAPE %':>8} {'fit s (all pairs)':>18} {'fit s (' + a.protocol + ')':>14}")
    print(f"{'scikit-learn':<14} {sk_mape:8.2f} {sk_fit_s:18.2f} {sk_protocol_s:14.2f}")
    print(f"{'epochcast':<14} {ev['mape_pct']:8.2f} {fit['fit_seconds']:18.2f} {ev['fit_seconds']:14.2f}")
    print(f"fit speed-up (scikit-learn / epochcast): {sk_fit_s / fit['fit_seconds']:.1f}x on all pairs, "
          f"{sk_protocol_s / ev['fit_seconds']:.1f}x over the {a.protocol} folds; "
          f"MAPE difference {ev['mape_pct'] - sk_mape:+.2f} points")
    print(json.dumps({"protocol": a.protocol, "pairs": int(len(P)),
                      "sklearn": {"mape_pct": sk_mape, "fit_s": sk_fit_s, "protocol_fit_s": sk_protocol_s},
                      "epochcast": {"mape_pct": ev["mape_pct"], "fit_s": fit["fit_seconds"],
                                    "protocol_fit_s": ev["fit_seconds"], "process_wall_s": ec_fit_wall_s}}))


if __name__ == "__main__":
    sys.exit(main())
