#!/usr/bin/env python3
"""Side-by-side: epochcast's stack vs the equivalent scikit-learn StackingRegressor.

Same dataset, same pairs (same workload on two GPU types), same features (the pair features
of src/model/pair_features.cpp, recomputed here from data/gpus.csv), same target
log(target/source epoch time), same protocol, in the same run. Prints MAPE and fit time for
both and their ratio.

  python3 bench/compare_sklearn.py --cli build/epochcast [--protocol lomo|kfold|logo]
      [--repeat N] [--reference-cli OTHER_BUILD/epochcast]

--repeat N times the one fit on all pairs N times on both sides, interleaved, and reports the
fastest of each (the machine is shared: the minimum is the least disturbed run).
--reference-cli also times another epochcast binary (e.g. a build of an older commit) in the
same run, so a before/after speed-up is measured against the same scikit-learn timings.
Besides wall-clock seconds it reports CPU seconds (all threads): scikit-learn's process time
around its fit, epochcast's `fit_cpu_seconds` (and the whole `epochcast fit` process, which also
loads the data and writes the model, for binaries without that field). On a shared machine
other jobs inflate wall time, not CPU time; wall time is what a user waits for on a free one.

--stack kernel (default) mirrors epochcast's default stack (model format 5); --stack linear the
format-3 stack, which newer binaries fit with `--linear-ridge` (a --reference-cli older than
format 4 is run without flags: its default was that stack).

scikit-learn has no XGBoost here (Debian ships none for Python), so its gradient boosting
stands in: HistGradientBoostingRegressor, with epochcast's XGBoost settings where it has them
(depth 4, 32 bins a feature; 50 rounds at learning rate 0.3, or 150 at 0.1 for --stack linear).
Kernel ridge is Nystroem (RBF, 256 basis rows drawn by the seed) + Ridge on the kNN columns,
imputed with the mean and standardised, exactly epochcast's subset-of-regressors objective;
its length scale (0.25/0.5/1/2 x sqrt(columns)) and penalty (0.001-1) are chosen once per
stack fit by 5-fold CV grouped by CNN model on the stack's training pairs, one Nystroem map
per length scale shared by the folds (as epochcast shares its basis). kNN measures distance on
the same columns as epochcast's. As in epochcast, the learners fit the correction to the
Amdahl prior (amdahl.memory_clock_split), clamped to its training range widened by 10 %, and the meta
learner is a non-negative linear regression (no intercept) on out-of-fold predictions from folds
grouped by CNN model plus folds holding each target GPU out of both sides; with kernel ridge
these give the weights for a pair with a GPU outside training (kernel ridge left out), and the
model-grouped plus 5 workload-grouped folds give those for a pair between training GPUs.
StackingRegressor cannot take several fold sets, so the stacking is written out with
scikit-learn's own estimators.
"""
import argparse, json, os, resource, subprocess, sys, time

# One OpenMP thread: on a shared 2-core machine spinning OpenMP workers slow scikit-learn down
# badly (epochcast runs XGBoost with one thread for the same reason); set before sklearn loads.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import ExtraTreesRegressor, HistGradientBoostingRegressor
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import LinearRegression, Ridge, RidgeCV
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
# epochcast's kNN and kernel ridge columns (learner_config in src/model/stacked_model.cpp).
NEAR_COLUMNS = ("src.log_epoch_s", "src.power_mean_over_tdp", "src.sm_clock_mean_over_max",
                "src.utilization_gpu_mean", "src.utilization_memory_mean")
KERNEL_SCALES, KERNEL_LAMBDAS, KERNEL_BASIS = (0.25, 0.5, 1.0, 2.0), (0.001, 0.01, 0.1, 1.0), 256


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
                for k in SPECS:
                    f[f"src.log_{k}"] = np.log(sg[k]); f[f"tgt.log_{k}"] = np.log(tg[k])
                    f[f"ratio.log_{k}"] = np.log(tg[k] / sg[k])
                busy = min(1, max(0, s["utilization_gpu_mean"] / 100))
                mem = min(1, max(0, s["utilization_memory_mean"] / 100))
                for k in AMDAHL:
                    f[f"amdahl.{k}"] = np.log(busy / (tg[k] / sg[k]) + 1 - busy)
                comp, bw = tg.fp32_tflops / sg.fp32_tflops, tg.memory_bandwidth_gbs / sg.memory_bandwidth_gbs
                f["amdahl.fp32_and_bandwidth"] = np.log(busy / np.sqrt(comp * bw) + 1 - busy)
                other = max(0.0, busy - mem)
                # The compute share's speed-up moves from the SM clock ratio (idle) to the FP32
                # ratio (busy), as src/model/pair_features.cpp (model format 4).
                clock = tg.max_sm_clock_mhz / sg.max_sm_clock_mhz
                busy_comp = comp ** busy * clock ** (1 - busy) if np.isfinite(clock) else comp
                f["amdahl.memory_clock_split"] = np.log(mem / bw + other / busy_comp + 1 - mem - other)
                f["_y"] = np.log(t["one_epoch_average_second"] / s["one_epoch_average_second"])
                f["_model"], f["_workload"] = s["model"], s["workload"]
                f["_source"], f["_target"] = sg.id, tg.id
                f["_src_s"], f["_tgt_s"] = s["one_epoch_average_second"], t["one_epoch_average_second"]
                rows.append(f)
    return pd.DataFrame(rows)


def near_columns(feats):
    return [i for i, n in enumerate(feats) if n.startswith(("amdahl.", "ratio.")) or n in NEAR_COLUMNS]


def select(cols):
    return ColumnTransformer([("columns", "passthrough", cols)])


def kernel_ridge(cols, seed, length_scale, lam):
    return make_pipeline(select(cols), SimpleImputer(), StandardScaler(),
                         Nystroem(gamma=0.5 / length_scale**2, n_components=KERNEL_BASIS, random_state=seed),
                         Ridge(alpha=lam))


def base_learners(seed, cols, stack="kernel", kernel=None):
    rounds, eta = (50, 0.3) if stack == "kernel" else (150, 0.1)
    gbm = ("gbm", HistGradientBoostingRegressor(max_iter=rounds, learning_rate=eta, max_depth=4, max_bins=32,
                                                random_state=seed))
    if stack == "kernel":
        second = ("kernel_ridge", kernel_ridge(cols, seed, *(kernel or (np.sqrt(len(cols)), 0.1))))
    else:
        second = ("ridge", make_pipeline(SimpleImputer(), StandardScaler(), RidgeCV(alphas=np.logspace(-2, 3, 10))))
    return [
        gbm, second,
        ("knn", make_pipeline(select(cols), SimpleImputer(), StandardScaler(), KNeighborsRegressor(7, weights="distance"))),
        ("extra_trees", make_pipeline(SimpleImputer(strategy="median"),
                                      ExtraTreesRegressor(100, min_samples_leaf=2, max_features=0.5,
                                                          random_state=seed, n_jobs=2))),
    ]


def group_folds(groups, k, seed=None):
    """epochcast's fold assignment: the distinct groups sorted and shuffled by the seed, or with no
    seed in order of first appearance (its kernel-ridge tuning: the same folds as epochcast's),
    dealt round-robin into min(k, groups) folds. Like epochcast, a different seed draws different
    folds, so a mean over seeds averages over fold draws too (GroupKFold's one fixed, size-balanced
    assignment made every seed score the same draw)."""
    if seed is None:
        names = pd.unique(groups)
    else:
        names = np.unique(groups)
        np.random.default_rng(seed).shuffle(names)
    k = min(k, len(names))
    fold = {g: i % k for i, g in enumerate(names)}
    f = np.array([fold[g] for g in groups])
    return [(np.where(f != j)[0], np.where(f == j)[0]) for j in range(k)]


def tune_kernel(X, r, models, cols, seed):
    """Length scale and penalty by 5-fold CV grouped by CNN model, total squared error."""
    Z = make_pipeline(select(cols), SimpleImputer(), StandardScaler()).fit_transform(X)
    folds = group_folds(models, 5)
    best, best_sse = (np.sqrt(len(cols)), 0.1), np.inf
    for rel in KERNEL_SCALES:
        scale = rel * np.sqrt(len(cols))
        phi = Nystroem(gamma=0.5 / scale**2, n_components=KERNEL_BASIS, random_state=seed).fit_transform(Z)
        # One Ridge per fold fits every penalty at once (one target column per penalty): XᵀX once.
        sse = np.zeros(len(KERNEL_LAMBDAS))
        for tr, te in folds:
            fit = Ridge(alpha=np.array(KERNEL_LAMBDAS)).fit(phi[tr], np.tile(r[tr, None], len(KERNEL_LAMBDAS)))
            sse += ((fit.predict(phi[te]) - r[te, None]) ** 2).sum(axis=0)
        for lam, e in zip(KERNEL_LAMBDAS, sse):
            if e < best_sse:
                best, best_sse = (scale, lam), e
    return best


def nnls(a, b, cols):
    w = np.zeros(a.shape[1])
    w[cols] = LinearRegression(positive=True, fit_intercept=False).fit(a[:, cols], b).coef_
    return w


class PriorStack:
    """epochcast's stack with scikit-learn parts: learners fit y - prior, meta on several fold sets."""

    def __init__(self, seed, cols, stack="kernel"):
        self.seed, self.cols, self.stack = seed, cols, stack
        self.kernel = None

    def _fit_all(self, X, r):
        return [clone(est).fit(X, r) for _, est in base_learners(self.seed, self.cols, self.stack, self.kernel)]

    def _predict_all(self, models, X):
        return np.column_stack([np.clip(m.predict(X), self.lo, self.hi) for m in models])

    def _oof(self, X, r, split_list):
        rows, oof = [], []
        for tr, te in split_list:
            rows.append(te); oof.append(self._predict_all(self._fit_all(X[tr], r[tr]), X[te]))
        return (np.concatenate(rows), np.vstack(oof)) if rows else (np.zeros(0, int), np.zeros((0, 4)))

    def fit(self, X, y, prior, models, sources, targets, workloads):
        r = y - prior
        span = r.max() - r.min()
        self.lo, self.hi = r.min() - 0.1 * span, r.max() + 0.1 * span
        self.sources, self.targets = set(sources), set(targets)
        if self.stack == "kernel":
            self.kernel = tune_kernel(X, r, models, self.cols, self.seed)
        model_rows, model_oof = self._oof(X, r, group_folds(models, 5, self.seed))
        gpu_splits = []
        if len(np.unique(targets)) >= 3:
            for g in np.unique(targets):
                tr = (sources != g) & (targets != g)
                if tr.any():
                    gpu_splits.append((np.where(tr)[0], np.where(targets == g)[0]))
        gpu_rows, gpu_oof = self._oof(X, r, gpu_splits)
        a, b = np.vstack([model_oof, gpu_oof]), r[np.concatenate([model_rows, gpu_rows])]
        if self.stack == "kernel":
            self.weights_unseen = nnls(a, b, [0, 2, 3])  # kernel ridge does not extrapolate to a new GPU
            w_rows, w_oof = self._oof(X, r, group_folds(workloads, 5, self.seed + 1))
            self.weights = nnls(np.vstack([model_oof, w_oof]), r[np.concatenate([model_rows, w_rows])], [0, 1, 2, 3])
        else:
            self.weights = self.weights_unseen = nnls(a, b, [0, 1, 2, 3])
        self.models = self._fit_all(X, r)
        return self

    def predict(self, X, prior, sources, targets, learners=False):
        seen = np.array([s in self.sources and t in self.targets for s, t in zip(sources, targets)])
        corr = self._predict_all(self.models, X)
        stack = prior + np.where(seen, corr @ self.weights, corr @ self.weights_unseen)
        return (stack, prior[:, None] + corr) if learners else stack


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
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "epochcast"))
    ap.add_argument("--reference-cli", help="another epochcast binary timed in the same run (before/after)")
    ap.add_argument("--data", default=os.path.join(ROOT, "data", "nvidiasmi_devicequery_all.csv"))
    ap.add_argument("--gpus", default=os.path.join(ROOT, "data", "gpus.csv"))
    ap.add_argument("--protocol", default="lomo", choices=["lomo", "kfold", "logo"])
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--repeat", type=int, default=1,
                    help="one-fit-on-all-pairs timings per side; the fastest is reported (0: no timing, MAPE only)")
    ap.add_argument("--dump", help="write scikit-learn's held-out predictions (stack and each learner, log ratio) "
                    "to this CSV, one row per pair, to compare with `epochcast eval --predictions`")
    ap.add_argument("--stack", default="kernel", choices=["kernel", "linear"],
                    help="kernel: the default stack (model format 5); linear: format 3's (`--linear-ridge`)")
    a = ap.parse_args()
    clis = [("epochcast", a.cli)] + ([("reference", a.reference_cli)] if a.reference_cli else [])

    P = pair_table(a.data, a.gpus)
    feats = [c for c in P.columns if not c.startswith("_")]
    X, y = P[feats].to_numpy(float), P._y.to_numpy()
    print(f"{len(P)} pairs, {len(feats)} features, protocol {a.protocol}, all-pairs fit best of {a.repeat}")

    # The prior with epochcast's fallbacks for missing utilisation channels (none in this data).
    prior = P["amdahl.memory_clock_split"].fillna(P["amdahl.fp32_and_bandwidth"]).fillna(
        -0.5 * (P["ratio.log_fp32_tflops"] + P["ratio.log_memory_bandwidth_gbs"])).to_numpy()
    groups = (P._model.to_numpy(), P._source.to_numpy(), P._target.to_numpy(), P._workload.to_numpy())
    cols = near_columns(feats)
    # The reference binary is taken to predate format 4: its default is the linear stack.
    flags = {"epochcast": ["--linear-ridge"] if a.stack == "linear" else [], "reference": []}

    def ec_fit(name, cli):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = json.loads(subprocess.run([cli, "fit", "--data", a.data, "--catalog", a.gpus, "-o",
                                         "/tmp/compare_sklearn.model.json", "--seed", str(a.seed), "--json"] + flags[name],
                                        check=True, capture_output=True, text=True).stdout)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        process_cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return out["fit_seconds"], out.get("fit_cpu_seconds"), process_cpu

    # One fit on all pairs, both sides interleaved, fastest of --repeat (wall and CPU separately).
    sk_fits, sk_cpus, ec_fits = [], [], {name: [] for name, _ in clis}
    for _ in range(a.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        PriorStack(a.seed, cols, a.stack).fit(X, y, prior, *groups)
        sk_fits.append(time.perf_counter() - t0)
        sk_cpus.append(time.process_time() - c0)
        for name, cli in clis:
            ec_fits[name].append(ec_fit(name, cli))
    sk_fit_s, sk_cpu_s = min(sk_fits, default=float("nan")), min(sk_cpus, default=float("nan"))

    pred = np.full(len(P), np.nan)
    learner_pred = np.full((len(P), 4), np.nan)
    sk_protocol_s = sk_protocol_cpu_s = 0.0
    for train, test in splits(P, a.protocol, a.seed):
        train, test = train.to_numpy(), test.to_numpy()
        t0, c0 = time.perf_counter(), time.process_time()
        m = PriorStack(a.seed, cols, a.stack).fit(X[train], y[train], prior[train], *(g[train] for g in groups))
        sk_protocol_s += time.perf_counter() - t0
        sk_protocol_cpu_s += time.process_time() - c0
        pred[test], learner_pred[test] = m.predict(X[test], prior[test], groups[1][test], groups[2][test], learners=True)
    ok = ~np.isnan(pred)
    ape = np.abs(np.exp(pred[ok]) - np.exp(y[ok])) / np.exp(y[ok]) * 100
    sk_mape = ape.mean()
    if a.dump:
        names = [n for n, _ in base_learners(a.seed, cols, a.stack)]
        out = P[["_workload", "_model", "_source", "_target"]].rename(columns=lambda c: c[1:]).assign(
            y=y, prior=prior, stack=pred, **{n: learner_pred[:, i] for i, n in enumerate(names)})
        out[ok].to_csv(a.dump, index=False, float_format="%.17g")

    # epochcast's protocol, same run.
    evs = {}
    for name, cli in clis:
        evs[name] = json.loads(subprocess.run([cli, "eval", "--data", a.data, "--catalog", a.gpus, "--protocol", a.protocol,
                                               "--seed", str(a.seed), "--json"] + flags[name], check=True,
                                              capture_output=True, text=True).stdout)

    def best(name, k):
        values = [f[k] for f in ec_fits[name] if f[k] is not None]
        return min(values) if values else float("nan")

    print(f"{'':<14} {'MAPE %':>8} {'all pairs wall s':>17} {'CPU s':>7} {'process CPU s':>14} "
          f"{a.protocol + ' wall s':>12} {'CPU s':>7}")
    print(f"{'scikit-learn':<14} {sk_mape:8.2f} {sk_fit_s:17.2f} {sk_cpu_s:7.2f} {'':>14} "
          f"{sk_protocol_s:12.2f} {sk_protocol_cpu_s:7.2f}")
    for name, _ in clis:
        ev = evs[name]
        print(f"{name:<14} {ev['mape_pct']:8.2f} {best(name, 0):17.2f} {best(name, 1):7.2f} {best(name, 2):14.2f} "
              f"{ev['fit_seconds']:12.2f} {ev.get('fit_cpu_seconds', float('nan')):7.2f}")
    for name, _ in clis:
        ev = evs[name]
        print(f"speed-up (scikit-learn / {name}): all pairs {sk_fit_s / best(name, 0):.1f}x wall, "
              f"{sk_cpu_s / best(name, 1):.1f}x CPU ({sk_cpu_s / best(name, 2):.1f}x against the whole process); "
              f"{a.protocol} folds {sk_protocol_s / ev['fit_seconds']:.1f}x wall, "
              f"{sk_protocol_cpu_s / ev.get('fit_cpu_seconds', float('nan')):.1f}x CPU; "
              f"MAPE difference {ev['mape_pct'] - sk_mape:+.2f} points")
    result = {"protocol": a.protocol, "stack": a.stack, "pairs": int(len(P)), "repeat": a.repeat,
              "sklearn": {"mape_pct": sk_mape, "fit_s": sk_fit_s, "fit_cpu_s": sk_cpu_s, "fit_s_all": sk_fits,
                          "protocol_fit_s": sk_protocol_s, "protocol_fit_cpu_s": sk_protocol_cpu_s}}
    for name, _ in clis:
        ev = evs[name]
        result[name] = {"mape_pct": ev["mape_pct"], "fit_s": best(name, 0), "fit_cpu_s": best(name, 1),
                        "process_cpu_s": best(name, 2), "fit_s_all": [f[0] for f in ec_fits[name]],
                        "protocol_fit_s": ev["fit_seconds"], "protocol_fit_cpu_s": ev.get("fit_cpu_seconds")}
    print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
