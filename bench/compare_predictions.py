#!/usr/bin/env python3
"""Where two stacks' held-out predictions part, pair by pair.

  python3 bench/compare_predictions.py A.csv B.csv [--by model|target|source]

A and B: `epochcast eval --predictions FILE` or `bench/compare_sklearn.py --dump FILE` (same
columns: workload, model, source, target, y, stack, then one log-ratio column per learner).
Pairs are joined on (workload, source, target). Prints, for the stack and each learner both
sides have (scikit-learn's `gbm` is matched with `xgboost`): MAPE on each side, the mean
difference of the APE, the RMS difference of the predictions in log ratio, and the MAPE by
held-out CNN model (or target / source GPU) — the groups where the difference comes from.

--swap (lomo files; one of them must carry the prior, as compare_sklearn.py's does): recovers each
side's meta weights per held-out model by least squares of its stack's correction on its
learners' corrections, then scores every learner set with every weight set: whether the
learners or the weights make the stacks' difference.
"""
import argparse
import sys

import numpy as np
import pandas as pd

KEYS = ["workload", "source", "target"]
ALIASES = {"gbm": "xgboost"}


def load(path):
    d = pd.read_csv(path).rename(columns=ALIASES)
    if d.duplicated(KEYS).any():
        sys.exit(f"{path}: a (workload, source, target) pair appears twice")
    return d


def ape(pred_log, y):
    return np.abs(np.exp(pred_log - y) - 1) * 100


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--by", default="model", choices=["model", "target", "source"])
    ap.add_argument("--swap", action="store_true", help="score each side's learners with the other's meta weights")
    a = ap.parse_args()
    A, B = load(a.a), load(a.b)
    J = A.merge(B, on=KEYS, suffixes=("_a", "_b"))
    if len(J) != len(A) or len(J) != len(B):
        print(f"warning: {len(A)} / {len(B)} pairs, {len(J)} in both", file=sys.stderr)
    if not np.allclose(J.y_a, J.y_b, atol=1e-9):
        sys.exit("the two files disagree on the truth y: not the same dataset")
    y = J.y_a.to_numpy()
    cols = [c for c in ("stack", "xgboost", "kernel_ridge", "ridge", "knn", "extra_trees")
            if f"{c}_a" in J.columns and f"{c}_b" in J.columns]
    by = "model_a" if a.by == "model" else a.by
    groups = sorted(J[by].unique())
    print(f"{len(J)} pairs; A = {a.a}, B = {a.b}")
    print(f"{'':<13} {'MAPE A':>7} {'MAPE B':>7} {'B-A':>6} {'rms dlog':>9}  " +
          " ".join(f"{str(g)[:11]:>11}" for g in groups))
    for c in cols:
        ea, eb = ape(J[f"{c}_a"].to_numpy(), y), ape(J[f"{c}_b"].to_numpy(), y)
        rms = np.sqrt(np.mean((J[f"{c}_a"] - J[f"{c}_b"]) ** 2))
        per = [eb[J[by] == g].mean() - ea[J[by] == g].mean() for g in groups]
        print(f"{c:<13} {ea.mean():7.3f} {eb.mean():7.3f} {eb.mean() - ea.mean():+6.3f} {rms:9.4f}  " +
              " ".join(f"{v:+11.3f}" for v in per))
    print(f"(per {a.by}: MAPE B − MAPE A)")
    if a.swap:
        swap(J, y)


def swap(J, y):
    prior = next((J[c] for c in ("prior", "prior_a", "prior_b") if c in J.columns), None)
    if prior is None:
        sys.exit("--swap needs the prior in one of the files (compare_sklearn.py --dump writes it)")
    prior = prior.to_numpy()
    learners = [c for c in ("xgboost", "kernel_ridge", "ridge", "knn", "extra_trees")
                if f"{c}_a" in J.columns and f"{c}_b" in J.columns]
    models = J["model_a"].to_numpy()
    corr = {s: np.column_stack([J[f"{c}_{s}"].to_numpy() - prior for c in learners]) for s in "ab"}
    weights = {}
    for s in "ab":
        for m in np.unique(models):
            rows = models == m
            weights[s, m] = np.linalg.lstsq(corr[s][rows], J[f"stack_{s}"].to_numpy()[rows] - prior[rows], rcond=None)[0]
    print("learners  weights  MAPE   (weights per held-out model: " + ", ".join(learners) + ")")
    for ls in "ab":
        for ws in "ab":
            pred = prior.copy()
            for m in np.unique(models):
                rows = models == m
                pred[rows] += corr[ls][rows] @ weights[ws, m]
            print(f"{ls:<9} {ws:<8} {ape(pred, y).mean():6.3f}")
    for s in "ab":
        w = np.array([weights[s, m] for m in np.unique(models)])
        print(f"weights {s}: " + "; ".join(f"{c} {w[:, i].min():.2f}-{w[:, i].max():.2f}" for i, c in enumerate(learners)))


if __name__ == "__main__":
    main()
