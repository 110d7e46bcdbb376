#!/usr/bin/env python3
"""Kernel ridge alone under lomo with different Nystroem basis rules (compare_sklearn.py's mirror of
epochcast's learner: kNN columns, mean-imputed, standardised, RBF, length scale and penalty tuned
per lomo fold by CV grouped by CNN model on the fold's training pairs, prior + clamped correction).

  /usr/bin/python3 bench/kernel_basis.py [--rules farthest,pivoted,random:42,random:1]

farthest: epochcast's rule (farthest-point rows, compare_sklearn.farthest_points); pivoted: greedy
pivoted Cholesky (the row with the largest residual kernel variance, at each length scale of the
grid: O(n m^2) per length scale, in numpy here); random:S: scikit-learn's Nystroem draw with seed S
(epochcast before branch krr5 drew its own). Prints MAPE % per rule.
"""
import argparse, os, sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.kernel_approximation import Nystroem
from sklearn.metrics.pairwise import rbf_kernel

import compare_sklearn as cs


def pivoted_cholesky(Z, m, gamma):
    n = len(Z)
    if m >= n:
        return np.arange(n)
    resid = np.ones(n)  # RBF: unit diagonal
    L = np.zeros((n, m))
    chosen = []
    for j in range(m):
        p = int(np.argmax(resid))
        if resid[p] <= 1e-12:
            break
        chosen.append(p)
        k = rbf_kernel(Z, Z[p:p + 1], gamma=gamma)[:, 0]
        col = (k - L[:, :j] @ L[p, :j]) / np.sqrt(resid[p])
        L[:, j] = col
        resid = np.maximum(resid - col ** 2, 0)
    return np.sort(np.array(chosen))


class PivotedNystroem(TransformerMixin, BaseEstimator):
    def __init__(self, gamma=1.0, n_components=cs.KERNEL_BASIS):
        self.gamma, self.n_components = gamma, n_components

    def fit(self, Z, y=None):
        Z = np.asarray(Z, float)
        basis = Z[pivoted_cholesky(Z, self.n_components, self.gamma)]
        self.nystroem_ = Nystroem(gamma=self.gamma, n_components=len(basis), random_state=0).fit(basis)
        return self

    def transform(self, Z):
        return self.nystroem_.transform(Z)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rules", default="farthest,pivoted,random:42,random:1,random:2,random:3,random:4")
    a = ap.parse_args()
    P = cs.pair_table(os.path.join(cs.ROOT, "data", "nvidiasmi_devicequery_all.csv"), os.path.join(cs.ROOT, "data", "gpus.csv"))
    feats = [c for c in P.columns if not c.startswith("_")]
    X, y = P[feats].to_numpy(float), P._y.to_numpy()
    prior = P["amdahl.memory_clock_split"].to_numpy()
    models = P._model.to_numpy()
    cols = cs.near_columns(feats)
    original = cs.nystroem
    for rule in a.rules.split(","):
        name, _, seed = rule.partition(":")
        seed = int(seed or 42)
        if name == "pivoted":
            cs.nystroem = lambda ls, s: PivotedNystroem(gamma=0.5 / ls ** 2)
        else:
            cs.nystroem = original
            cs.BASIS = name
        pred = np.full(len(P), np.nan)
        for m in sorted(np.unique(models)):
            tr, te = models != m, models == m
            r = y[tr] - prior[tr]
            span = r.max() - r.min()
            lo, hi = r.min() - 0.1 * span, r.max() + 0.1 * span
            ls, lam = cs.tune_kernel(X[tr], r, models[tr], cols, seed)
            est = cs.kernel_ridge(cols, seed, ls, lam).fit(X[tr], r)
            pred[te] = prior[te] + np.clip(est.predict(X[te]), lo, hi)
        ape = np.abs(np.exp(pred - y) - 1) * 100
        print(f"{rule:12} kernel ridge alone, lomo MAPE {ape.mean():.3f} %", flush=True)


if __name__ == "__main__":
    sys.exit(main())
