"""The coreb-rs wheel's module against trec_eval 10.0 and pytrec_eval (scripts/test-wheel).

Usage:
  wheel_check.py pytrec <fixtures> <out.json>     (in the test venv, which has pytrec_eval)
      per-query values of pytrec_eval on trec_eval's conformance cases, as JSON
  wheel_check.py coreb <fixtures> <pytrec.json>   (in the fresh venv: the wheel and nothing else)
      coreb_rs.RelevanceEvaluator on the same cases: every per-query value trec_eval 10.0
      prints (out.test.aq, out.test.aql, out.test.meas_params) as it prints it, and equal to
      pytrec_eval's wherever pytrec_eval prints 10.0's value (most of them to 1e-12 too)

Standard library only besides the module under test.
"""
import json
import os
import sys

# trec_eval's quicktest cases that are per query without -c: (measures, level, qrels,
# results, expected output).
CASES = [
    (["all_trec"], 1, "qrels.test", "results.test", "out.test.aq"),
    (["all_trec", "relstring.20"], 2, "qrels.rel_level", "results.test", "out.test.aql"),
    (["iprec_at_recall..10,.20,.25,.75,.50", "P.5,7,3", "recall.20,2000", "Rprec_mult.5.0,0.2,0.35",
      "utility.2,-1,0,0", "11pt_avg..25,.5,.75", "ndcg.1=3,2=9,4=4.5", "ndcg_cut.10,20,23.4", "success.2,5,20"],
     1, "qrels.test", "results.test", "out.test.meas_params"),
]


def read_qrels(path):
    qrels = {}
    with open(path) as f:
        for line in f:
            q, _, d, r = line.split()
            qrels.setdefault(q, {})[d] = int(r)
    return qrels


def read_run(path):
    run = {}
    with open(path) as f:
        for line in f:
            q, _, d, _, score, _ = line.split()
            run.setdefault(q, {})[d] = float(score)
    return run


def expected(path):
    """{(query, measure): printed value} of trec_eval's per-query lines."""
    out = {}
    with open(path) as f:
        for line in f:
            name, q, value = line.rstrip("\n").split("\t")
            if q != "all":
                out[(q, name.strip())] = value
    return out


def printed(value, like):
    """A value as trec_eval prints it (`%6.4f`, `%ld` or `'relstring'`)."""
    if isinstance(value, str):
        return "'%s'" % value
    if "." not in like:
        return "%d" % value
    return "%6.4f" % value


def pytrec(fixtures, out_path):
    import pytrec_eval
    out = []
    for measures, level, qrels, results, _ in CASES:
        qr = read_qrels(os.path.join(fixtures, qrels))
        ms = set()
        for m in measures:
            # pytrec_eval takes fewer measures than trec_eval (no relstring, no 11pt_avg
            # parameters): only those it takes are compared.
            try:
                pytrec_eval.RelevanceEvaluator(qr, {m}, level)
                ms.add(m)
            except ValueError:
                pass
        ev = pytrec_eval.RelevanceEvaluator(qr, ms, level)
        out.append(ev.evaluate(read_run(os.path.join(fixtures, results))))
    with open(out_path, "w") as f:
        json.dump(out, f)


def coreb(fixtures, pytrec_path):
    import coreb_rs
    with open(pytrec_path) as f:
        theirs_all = json.load(f)
    checked = agreed = differs = exact = 0
    pytrec_off, inexact = set(), set()
    for (measures, level, qrels, results, exp), theirs in zip(CASES, theirs_all):
        ours = coreb_rs.RelevanceEvaluator(read_qrels(os.path.join(fixtures, qrels)), measures, relevance_level=level).evaluate(
            read_run(os.path.join(fixtures, results)))
        want = expected(os.path.join(fixtures, exp))
        assert want, exp
        for (q, name), value in want.items():
            assert q in ours and name in ours[q], f"{exp}: no {name} for query {q}"
            got = printed(ours[q][name], value)
            assert got.strip() == value.strip(), f"{exp}: query {q} {name}: coreb_rs {got}, trec_eval 10.0 {value}"
            checked += 1
            if name in theirs.get(q, {}):
                if printed(theirs[q][name], value).strip() == value.strip():
                    # Equal as printed (that is 10.0's value, checked above); equal to the last
                    # bits too unless pytrec_eval's older trec_eval computes it another way.
                    agreed += 1
                    if abs(ours[q][name] - theirs[q][name]) <= 1e-12:
                        exact += 1
                    else:
                        inexact.add(name)
                else:
                    differs += 1
                    pytrec_off.add(name)
    print(f"coreb_rs: {checked} per-query values as trec_eval 10.0 prints them; equal to pytrec_eval as printed on the {agreed} "
          f"where pytrec_eval prints 10.0's value ({exact} of them to 1e-12; not to 1e-12: {sorted(inexact)}); "
          f"{differs} where pytrec_eval does not print 10.0's value: {sorted(pytrec_off)}")
    assert checked > 500 and agreed > checked // 2 and exact > agreed * 9 // 10, (checked, agreed, exact)


if __name__ == "__main__":
    {"pytrec": pytrec, "coreb": coreb}[sys.argv[1]](sys.argv[2], sys.argv[3])
