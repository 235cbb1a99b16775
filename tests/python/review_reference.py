"""The figures of `coreb review report` recomputed with reference implementations, from the
answer files alone. Used by tests/review.rs.

    review_reference.py FILE...

Per question: the share of "yes" among the answers with its 95 % Wilson interval
(statsmodels' proportion_confint), Cohen's κ for two reviewers over the problems both
answered (scikit-learn's cohen_kappa_score), Fleiss' κ for three or more over the problems
all answered (statsmodels' fleiss_kappa) and Krippendorff's α, nominal, with missing answers
(the krippendorff package). Prints {question: {...}} as JSON; an undefined figure is null.
"""

import json
import math
import sys

import krippendorff
import numpy as np
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa
from statsmodels.stats.proportion import proportion_confint

ANSWERS = ["yes", "no", "unsure"]
QUESTIONS = ["intent", "tests", "disguise", "distractors", "summary"]


def finite(x):
    x = float(x)
    return x if math.isfinite(x) else None


def main():
    answers = {}
    problems = set()
    for path in sys.argv[1:]:
        for line in open(path):
            if line.strip():
                a = json.loads(line)
                problems.add(a["problem_id"])
                if a["answer"] is not None:
                    answers[(a["reviewer"], a["problem_id"], a["question"])] = ANSWERS.index(a["answer"])
    reviewers = sorted({r for r, _, _ in answers})
    problems = sorted(problems)
    out = {}
    for q in QUESTIONS:
        units = [[answers.get((r, p, q)) for r in reviewers] for p in problems]
        given = [v for u in units for v in u if v is not None]
        yes = sum(1 for v in given if v == 0)
        low, high = proportion_confint(yes, len(given), alpha=0.05, method="wilson")
        fig = {"yes": yes, "of": len(given), "share": yes / len(given), "low": float(low), "high": float(high), "cohen_kappa": None, "fleiss_kappa": None}
        if len(reviewers) == 2:
            pairs = [(u[0], u[1]) for u in units if None not in u]
            fig["cohen_kappa"] = finite(cohen_kappa_score([a for a, _ in pairs], [b for _, b in pairs]))
        else:
            table = np.array([[sum(1 for v in u if v == c) for c in range(3)] for u in units if None not in u])
            fig["fleiss_kappa"] = finite(fleiss_kappa(table, method="fleiss"))
        data = np.array([[np.nan if u[i] is None else u[i] for u in units] for i in range(len(reviewers))], dtype=float)
        fig["krippendorff_alpha"] = finite(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal", value_domain=[0, 1, 2]))
        out[q] = fig
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
