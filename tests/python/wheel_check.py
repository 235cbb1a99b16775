"""The coreb-rs wheel's module against trec_eval 10.0 and pytrec_eval (scripts/test-wheel).

Usage:
  wheel_check.py pytrec <fixtures> <out.json>     (in the test venv, which has pytrec_eval)
      per-query values of pytrec_eval on trec_eval's conformance cases, as JSON, and on
      SPELLINGS: every measure family with several cut-offs, given as separate entries
      (`{"P.5", "P_10", "P.20"}`), joined (`{"P.5,10,20"}`) and beside the bare family
  wheel_check.py coreb <fixtures> <pytrec.json>   (in the fresh venv: the wheel and nothing else)
      coreb_rs.RelevanceEvaluator on the same cases: every per-query value trec_eval 10.0
      prints (out.test.aq, out.test.aql, out.test.meas_params) as it prints it, and equal to
      pytrec_eval's wherever pytrec_eval prints 10.0's value (most of them to 1e-12 too);
      on SPELLINGS, the same measures pytrec_eval returns (none dropped, none added), every
      spelling of a family giving the same values, equal to pytrec_eval's as printed

Standard library only besides the module under test.
"""
import json
import os
import subprocess
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

# Every family pytrec_eval takes with parameters, each with several cut-offs; every set of
# measures is given as separate entries (dots and underscores), joined, and with the bare
# family beside them (which then keeps only the cut-offs, as pytrec_eval does).
FAMILIES = {
    "P": ["5", "10", "20"],
    "recall": ["5", "10", "100"],
    "ndcg_cut": ["5", "10", "20"],
    "map_cut": ["5", "10", "30"],
    "success": ["1", "5", "10"],
    "relative_P": ["5", "10", "15"],
    "Rprec_mult": ["0.2", "0.5", "1.0"],
    "iprec_at_recall": ["0.00", "0.50", "1.00"],
}


# Measures of trec_eval 10.0 that pytrec_eval's trec_eval does not have.
NEWER_THAN_PYTREC = ("rbp", "rbp_resid", "unj_")


def spellings():
    """{label: [measures]}: each family's cut-offs spelt every way pytrec_eval takes."""
    out = {}
    for fam, cuts in FAMILIES.items():
        out[f"{fam} separate"] = [f"{fam}.{c}" for c in cuts]
        out[f"{fam} separate_"] = [f"{fam}_{c}" for c in cuts]
        out[f"{fam} mixed"] = [f"{fam}.{cuts[0]}", f"{fam}_{cuts[1]}", f"{fam}.{','.join(cuts[1:])}"]
        out[f"{fam} joined"] = [f"{fam}.{','.join(cuts)}"]
        out[f"{fam} with bare"] = [fam] + [f"{fam}.{c}" for c in cuts]
    out["two families, separate"] = ["P.5", "P.10", "ndcg_cut.5", "ndcg_cut.10", "map"]
    out["two families, joined"] = ["P.5,10", "ndcg_cut.5,10", "map"]
    out["all_trec"] = ["all_trec"]
    out["all_trec and P.7"] = ["all_trec", "P.7"]
    return out


def read_trec(path, columns, value):
    """{query: {doc: value(fields)}} of a TREC file of `columns` whitespace-separated columns,
    the query first and the document third."""
    out = {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) != columns:
                raise ValueError(f"{path}: {len(fields)} columns, not {columns}: {line!r}")
            out.setdefault(fields[0], {})[fields[2]] = value(fields)
    return out


def read_qrels(path):
    return read_trec(path, 4, lambda f: int(f[3]))


def read_run(path):
    return read_trec(path, 6, lambda f: float(f[4]))


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


def pytrec_takes(measure, level):
    """Whether pytrec_eval takes `measure` cleanly, asked in a child process. pytrec_eval refuses
    some of trec_eval's measures (a ValueError) and takes others with parameters its own
    splitting at commas mangles (`utility.2,-1,0,0`, `ndcg.1=3,2=9`: its C code then prints
    "improper number of coefficients" or "malformed pair parameters"); either leaves its C
    extension's heap corrupt, so that a later evaluator in the same process aborts ("double
    free or corruption") or spins for ever. A measure is taken when a child builds an evaluator
    of it, evaluates a run with it, exits 0 and prints nothing."""
    probe = ("import sys, pytrec_eval\n"
             "ev = pytrec_eval.RelevanceEvaluator({'q': {'d': 1, 'e': 0}}, {sys.argv[1]}, int(sys.argv[2]))\n"
             "ev.evaluate({'q': {'d': 2.0, 'e': 1.0}})\n")
    done = subprocess.run([sys.executable, "-c", probe, measure, str(level)], timeout=60,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return done.returncode == 0 and not done.stderr


def pytrec(fixtures, out_path):
    import pytrec_eval
    qr = read_qrels(os.path.join(fixtures, "qrels.test"))
    run = read_run(os.path.join(fixtures, "results.test"))
    spelt = {label: pytrec_eval.RelevanceEvaluator(qr, set(ms)).evaluate(run) for label, ms in spellings().items()}
    out = []
    for measures, level, qrels, results, _ in CASES:
        qr = read_qrels(os.path.join(fixtures, qrels))
        # pytrec_eval takes fewer measures than trec_eval cleanly (not 11pt_avg, iprec_at_recall,
        # utility or ndcg with these parameters): only those it takes cleanly are compared.
        ms = {m for m in measures if pytrec_takes(m, level)}
        ev = pytrec_eval.RelevanceEvaluator(qr, ms, level)
        out.append(ev.evaluate(read_run(os.path.join(fixtures, results))))
    with open(out_path, "w") as f:
        json.dump({"cases": out, "spellings": spelt}, f)


def coreb(fixtures, pytrec_path):
    import coreb_rs
    with open(pytrec_path) as f:
        pytrec_out = json.load(f)
    theirs_all = pytrec_out["cases"]
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

    # Every spelling pytrec_eval takes: the same measures back, the same values.
    qr = read_qrels(os.path.join(fixtures, "qrels.test"))
    run = read_run(os.path.join(fixtures, "results.test"))
    values = 0
    by_family = {}
    for label, ms in spellings().items():
        theirs = pytrec_out["spellings"][label]
        for order in (ms, list(reversed(ms)), set(ms)):
            ours = coreb_rs.RelevanceEvaluator(qr, order).evaluate(run)
            assert ours.keys() == theirs.keys(), f"{label}: queries differ"
            for q in theirs:
                # `runid` and `relstring` are strings pytrec_eval leaves out or gives as numbers.
                mine = {k: v for k, v in ours[q].items() if k not in ("runid", "relstring")}
                want = {k: v for k, v in theirs[q].items() if k not in ("runid", "relstring")}
                extra = mine.keys() - want.keys()
                if label.startswith("all_trec"):
                    # trec_eval 10.0's `all_trec` holds measures that pytrec_eval's older
                    # trec_eval lacks (rank-biased precision, unjudged counts): coreb_rs returns
                    # them too, as trec_eval 10.0 prints them; nothing else may differ.
                    extra = {k for k in extra if not k.startswith(NEWER_THAN_PYTREC)}
                assert not extra and want.keys() <= mine.keys(), (
                    f"{label} ({order}): query {q}: coreb_rs returns {sorted(extra)} more, "
                    f"{sorted(want.keys() - mine.keys())} fewer than pytrec_eval")
                for k, v in want.items():
                    if k not in pytrec_off:
                        assert "%6.4f" % mine[k] == "%6.4f" % v, f"{label}: query {q} {k}: coreb_rs {mine[k]}, pytrec_eval {v}"
                    values += 1
        fam = label.split(" ")[0]
        if fam in FAMILIES:
            by_family.setdefault(fam, []).append(ours)
    for fam, results in by_family.items():
        # Every spelling of one set of cut-offs gives the same values.
        for r in results[1:]:
            assert r == results[0], f"{fam}: the spellings differ"
    print(f"coreb_rs: {len(spellings())} spellings of {len(FAMILIES)} families (separate, joined, mixed, beside the bare "
          f"family, in three orders): the measures pytrec_eval returns, {values} values equal as printed")


if __name__ == "__main__":
    {"pytrec": pytrec, "coreb": coreb}[sys.argv[1]](sys.argv[2], sys.argv[3])
