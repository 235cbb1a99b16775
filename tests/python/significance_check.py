"""Recompute coreb's statistics independently: numpy bootstrap intervals with the same
resampling indices (SplitMix64 as coreb documents it), scipy.stats.wilcoxon p-values and the
sign-flip randomisation test, and compare with what coreb printed.

usage: significance_check.py eval RESULTS_JSON
       significance_check.py compare A_JSON B_JSON COMPARE_JSON
Prints one line per check and exits 1 on any mismatch."""
import json
import sys

import numpy as np
from scipy import stats

MASK = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.s = seed & MASK

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & MASK
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)


def indices(n, resamples, seed):
    rng = SplitMix64(seed)
    return np.array([[(rng.next() * n) >> 64 for _ in range(n)] for _ in range(resamples)])


def bootstrap(values, cfg):
    values = np.asarray(values, dtype=np.float64)
    idx = indices(len(values), cfg["resamples"], cfg["seed"])
    means = values[idx].mean(axis=1)
    alpha = (1 - cfg["confidence"]) / 2
    return np.percentile(means, [100 * alpha, 100 * (1 - alpha)])


def randomization(d, rounds, seed):
    d = np.asarray(d, dtype=np.float64)
    rng = SplitMix64(seed)
    observed = abs(d.mean())
    hits = 0
    for _ in range(rounds):
        signs = np.array([-1.0 if rng.next() >> 63 else 1.0 for _ in range(len(d))])
        m = abs((signs * d).sum() / len(d))
        hits += m >= observed - 1e-12 * max(observed, 1e-300)
    return (hits + 1) / (rounds + 1)


failures = []


def check(label, got, want, tol):
    ok = (got is None and want is None) or (got is not None and want is not None and abs(got - want) <= tol)
    print(f"{'ok ' if ok else 'BAD'} {label}: coreb {got!r} independent {want!r}")
    if not ok:
        failures.append(label)


MEASURES = ["ndcg", "map", "recall", "precision", "mrr", "r_cap"]

if sys.argv[1] == "eval":
    res = json.load(open(sys.argv[2]))
    cfg = res["bootstrap"]
    for t in res["tasks"]:
        groups = {"all": (t["queries"], t["ci"]["overall"])}
        for sub, ci in t["ci"]["by_subtask"].items():
            groups[sub] = ([q for q in t["queries"] if q["subtask"] == sub], ci)
        for g, (queries, ci) in groups.items():
            for m in MEASURES:
                for i, k in enumerate(res["ks"]):
                    lo, hi = bootstrap([q["at_k"][m][i] for q in queries], cfg)
                    check(f"{t['task']}/{g} {m}@{k} low", ci[m][i]["low"], lo, 1e-12)
                    check(f"{t['task']}/{g} {m}@{k} high", ci[m][i]["high"], hi, 1e-12)
else:
    a, b, cmp = (json.load(open(p)) for p in sys.argv[2:5])
    metric, k = cmp["metric"].split("@")
    metric = {"p": "precision", "rcap": "r_cap"}.get(metric, metric)
    cfg = cmp["bootstrap"]
    for t in cmp["tasks"]:
        ta = next(x for x in a["tasks"] if x["task"] == t["task"])
        tb = next(x for x in b["tasks"] if x["task"] == t["task"])
        ia, ib = a["ks"].index(int(k)), b["ks"].index(int(k))
        vb = {q["qid"]: q["at_k"][metric][ib] for q in tb["queries"]}
        xa = np.array([q["at_k"][metric][ia] for q in ta["queries"]])
        xb = np.array([vb[q["qid"]] for q in ta["queries"]])
        r = t["overall"]
        label = f"{t['task']} (n={len(xa)})"
        check(f"{label} difference", r["difference"], float((xb - xa).mean()), 1e-12)
        lo, hi = bootstrap(xb - xa, cfg)
        check(f"{label} ci low", r["ci"]["low"], lo, 1e-12)
        check(f"{label} ci high", r["ci"]["high"], hi, 1e-12)
        want = None if np.all(xb == xa) else float(stats.wilcoxon(xa, xb).pvalue)
        check(f"{label} wilcoxon p", r["wilcoxon_p"], want, 1e-9)
        check(f"{label} randomisation p", r["randomization_p"], randomization(xb - xa, cmp["randomization_rounds"], cfg["seed"]), 1e-12)

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
