#!/usr/bin/env python3
"""Compare a coreb release with what the CoREB authors' own dataset maker composes from the
same build (issue #32): `QueryCorpusDatasetMaker` of the PyPI package `coreb` 0.1.0
(`coreb_runner/runners/query_corpus_dataset_maker.py`), run unmodified.

Usage: series_conformance.py <release> <build artifacts> <work dir> <cap> [<uncapped report>]

The adapter below writes the maker's four inputs from the sample build: the code corpus (the
release's code documents, coreb's ids; coreb's two model roles under the maker's two
hard-coded model names), the text corpus (full statements; distractors as noise texts whose
`meta.source_problem_id` is their own id, since the maker needs one and takes a real problem
id for the problem's statement), the summaries (`abbreviate`) and the search queries
(`queries`, keyed `<problem>_<type>` and, for a language's variant, `<problem>_<type>_<lang>`,
as the authors' query generator keys them). It runs the maker with `code2text` on, then
compares subtask by subtask: the queries (problem, language, text or anchor), their
positives, their hard negatives (each drawn from the candidates the series' definition gives
that query, as many per query on both sides).

Every difference must be one the issue lists as the maker's defect, which coreb fixes:
- `search_per_language_variant`: a search query written for a language is that language's
  query in coreb; the maker's key parser drops it and reuses the unconstrained text;
- `cross_lang_earlier_translations`: a `cross_lang` query of coreb judges every translation;
  the maker judges only those with a larger id and can draw the others as hard negatives.
Anything else is a failure (exit 1, the differences listed).

With a cap (`<cap>` below the sample's counts, and the uncapped run's report): every capped
coreb search subtask must hold min(cap, its uncapped count) queries; the maker's counts are
reported beside (it samples before dropping its junk entries, so it holds fewer).

Prints one JSON report on stdout.
"""
import json
import os
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.parquet as pq

from jsonl_files import jsonl, write_jsonl

ROLE_NAMES = {"anchor": "gemini-3-flash", "target": "claude-sonnet-4-5"}
MAX_NEGATIVES = 3


def rows(path):
    return pq.read_table(path).to_pylist()


class Release:
    """The coreb release: corpora, queries and judgements per task."""

    def __init__(self, path):
        self.path = Path(path)
        manifest = json.loads((self.path / "MANIFEST.json").read_text(encoding="utf-8"))
        self.roles = manifest["stages"]["qrels"]["roles"]
        self.composition = manifest["stages"]["qrels"]["composition"]
        self.code = rows(self.path / "code_corpus.parquet")
        self.text = rows(self.path / "text_corpus.parquet")
        self.code_by_id = {d["code_id"]: d for d in self.code}
        self.problems = sorted({d["problem_id"] for d in self.text})
        self.queries, self.qrels = {}, {}
        for task in ("text2code", "code2code", "code2text"):
            self.queries[task] = rows(self.path / f"{task}_queries.parquet")
            judged = defaultdict(lambda: ({}, {}))
            for r in rows(self.path / f"{task}_qrels.parquet"):
                judged[r["query_id"]][0 if r["relevance"] >= 2 else 1][r["doc_id"]] = r["relevance"]
            self.qrels[task] = judged


def maker_inputs(release, artifacts, work):
    """The maker's four inputs, from the build."""
    problems = set(release.problems)
    model_name = {release.roles["anchor"]: ROLE_NAMES["anchor"], release.roles["target"]: ROLE_NAMES["target"]}
    code = [
        {"code_id": d["code_id"], "code": d["code"], "language": d["language"], "model": model_name.get(d["model"], d["model"]),
         "meta": {"source_problem_id": d["problem_id"], "passed": d["passed"]}}
        for d in release.code
    ]
    texts = []
    for t in release.text:
        if t["kind"] == "full":
            texts.append({"text_id": t["text_id"], "text": t["text"], "meta": {"source_problem_id": t["problem_id"]}})
        elif t["kind"] == "distractor":
            texts.append({"text_id": t["text_id"], "text": t["text"],
                          "meta": {"source_problem_id": f"noise:{t['text_id']}", "is_noise_sample": True, "original_problem_id": t["problem_id"]}})
    abbrev = {s["problem_id"]: {"abbreviated": s["text"]} for s in jsonl(artifacts / "abbreviate/summaries.jsonl") if s["problem_id"] in problems}
    queries = defaultdict(list)
    for q in jsonl(artifacts / "queries/queries.jsonl"):
        if q["problem_id"] not in problems:
            continue
        key = f"{q['problem_id']}_{q['query_type']}" + (f"_{q['language']}" if q.get("language") else "")
        queries[key].append({"query": q["text"]})
    paths = {name: work / name for name in ("code_corpus.jsonl", "text_corpus.jsonl", "abbrev.json", "queries.json")}
    write_jsonl(paths["code_corpus.jsonl"], code, ensure_ascii=False)
    write_jsonl(paths["text_corpus.jsonl"], texts, ensure_ascii=False)
    paths["abbrev.json"].write_text(json.dumps(abbrev, ensure_ascii=False), encoding="utf-8")
    paths["queries.json"].write_text(json.dumps(queries, ensure_ascii=False), encoding="utf-8")
    return paths


def run_maker(paths, work, cap):
    out = work / "maker_out"
    out.mkdir(parents=True, exist_ok=True)  # the maker does not make it
    cwd = os.getcwd()
    os.chdir(work)  # importing coreb_runner writes empty *.log files into the current directory
    # The maker logs to stdout: keep it on stderr, so stdout holds the report alone.
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        from coreb_runner.runners.query_corpus_dataset_maker import QueryCorpusDatasetMaker
        config = {
            "data": {"queries_dir": str(paths["queries.json"]), "code_corpus_dir": str(paths["code_corpus.jsonl"]),
                     "text_corpus_dir": str(paths["text_corpus.jsonl"]), "abbrev_text_dir": str(paths["abbrev.json"]),
                     "output_dir": str(out)},
            "dataset": {"max_queries_per_type": cap, "random_seed": 42, "generate_flags": {"code2text": True}},
        }
        QueryCorpusDatasetMaker(config).run()
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.chdir(cwd)
    made = {}
    for task in ("text2code", "code2code", "code2text"):
        queries = jsonl(out / f"{task}_queries.jsonl") if (out / f"{task}_queries.jsonl").exists() else []
        judged = defaultdict(lambda: ({}, {}))
        if (out / f"{task}_qrels.jsonl").exists():
            for r in jsonl(out / f"{task}_qrels.jsonl"):
                judged[r["query_id"]][0 if r["relevance"] >= 2 else 1][r["doc_id"]] = r["relevance"]
        made[task] = (queries, judged)
    return made


def split_subtask(name, prefix):
    """`t2c_canonical_retro_cpp` → (`canonical`, `cpp`); `c2t_full_retro_any` → (`full_retro`, `any`)."""
    rest = name[len(prefix):]
    kind, constraint = rest.rsplit("_", 1)
    return kind.removesuffix("_retro") if prefix == "t2c_" else kind, constraint


def keyed_coreb(release):
    """coreb's queries per task: key → (subtask, positives, negatives, query row)."""
    out = {}
    t2c_text = {q["query_id"]: q["query"] for q in release.queries["text2code"]}
    for task, queries in release.queries.items():
        keyed = {}
        for q in queries:
            pos, neg = release.qrels[task][q["query_id"]]
            if task == "text2code":
                text = q["query"]
                if q["subtask"] == "search" and q["language_constraint"] != "any":
                    # Compared by the unconstrained query it restates (the maker reuses that text).
                    text = t2c_text[q["query_id"].rsplit("_", 1)[0] + "_any"]
                key = (q["subtask"], q["language_constraint"], q["source_problem_id"], text)
                subtask = f"{q['subtask']}_{q['language_constraint']}"
            elif task == "code2code":
                key = (q["subtask"], q["source_doc_id"])
                subtask = q["subtask"]
            else:
                key = (q["subtask"], q["language_constraint"], q["source_doc_id"])
                subtask = f"{q['subtask']}_{q['language_constraint']}"
            keyed.setdefault(key, []).append((subtask, set(pos), set(neg), q))
        out[task] = keyed
    return out


def keyed_maker(made):
    out = {}
    for task, (queries, judged) in made.items():
        keyed = {}
        for q in queries:
            pos, neg = judged[q["query_id"]]
            m = q["meta"]
            if task == "text2code":
                kind, constraint = split_subtask(q["subtask"], "t2c_")
                key = (kind, constraint, m["source_problem_id"], q["query"])
                subtask = f"{kind}_{constraint}"
            elif task == "code2code":
                key = (q["subtask"].removeprefix("c2c_"), m["anchor_code_id"])
                subtask = key[0]
            else:
                kind, constraint = split_subtask(q["subtask"], "c2t_")
                key = (kind, constraint, m["anchor_code_id"])
                subtask = f"{kind}_{constraint}"
            keyed.setdefault(key, []).append((subtask, set(pos), set(neg), q))
        out[task] = keyed
    return out


def pooled(tiers, exclude):
    """The series' hard-negative candidates: whole tiers until the pool holds enough."""
    pool = []
    for tier in tiers:
        if len(pool) >= MAX_NEGATIVES:
            break
        pool.extend(d for d in tier if d not in exclude and d not in pool)
    return set(pool)


def candidates(release, task, key, positives):
    """The candidates the series' definition gives a query (coreb composes the same)."""
    return tiers_of(release, task, key, positives)[1]


def tiers_of(release, task, key, positives):
    """The query's first tier of hard negatives and its pooled candidates."""
    docs = release.code_by_id
    if task == "code2text":
        anchor = docs[key[2]]
        own = [t["text_id"] for t in release.text if t["kind"] == "distractor" and t["problem_id"] == anchor["problem_id"]]
        if len(own) >= MAX_NEGATIVES:
            return set(own), set(own)
        return set(own), set(own) | {t["text_id"] for t in release.text if t["kind"] == "distractor"}
    if task == "text2code":
        subtask, constraint, problem, _ = key
        same = [d for d in release.code if d["problem_id"] == problem]
        anchor = None
        fits = lambda d: constraint == "any" or d["language"] == constraint  # noqa: E731
    else:
        subtask, anchor_id = key
        anchor = docs[anchor_id]
        same = [d for d in release.code if d["problem_id"] == anchor["problem_id"] and d["code_id"] != anchor_id]
        first = {
            "mono_lang": lambda d: d["model"] != anchor["model"] and d["language"] == anchor["language"],
            "cross_lang": lambda d: d["language"] != anchor["language"],
            "cross_model": lambda d: d["model"] != anchor["model"] and d["language"] != anchor["language"],
        }[subtask]
        fits = first
    failed = [d["code_id"] for d in same if not d["passed"]]
    tiers = [[d["code_id"] for d in same if not d["passed"] and fits(d)], failed, [d["code_id"] for d in same if d["passed"]]]
    return {d for d in tiers[0] if d not in positives}, pooled(tiers, positives)


def compare(release, made):
    ours, theirs = keyed_coreb(release), keyed_maker(made)
    problems, listed = [], Counter()
    counts, wider = {}, Counter()
    for task in ("text2code", "code2code", "code2text"):
        mine, other = ours[task], theirs[task]
        counts[task] = {
            "coreb": dict(sorted(Counter(s for v in mine.values() for s, *_ in v).items())),
            "maker": dict(sorted(Counter(s for v in other.values() for s, *_ in v).items())),
        }
        for key in sorted(set(mine) | set(other), key=str):
            a, b = mine.get(key, []), other.get(key, [])
            if len(a) != len(b):
                problems.append(f"{task} {key}: {len(a)} coreb quer(ies), {len(b)} the maker's")
                continue
            for (subtask, pos_a, neg_a, q), (_, pos_b, neg_b, _) in zip(a, b):
                where = f"{task} {subtask} `{q['query_id']}`"
                if task == "text2code" and q["subtask"] == "search" and q["language_constraint"] != "any":
                    if q["query"] != key[3]:
                        listed["search_per_language_variant"] += 1
                if pos_a != pos_b:
                    earlier = {d for d in pos_a - pos_b if task == "code2code" and key[0] == "cross_lang" and d < key[1]}
                    if task == "code2code" and key[0] == "cross_lang" and pos_b <= pos_a and earlier == pos_a - pos_b:
                        listed["cross_lang_earlier_translations"] += len(earlier)
                    else:
                        problems.append(f"{where}: positives differ: coreb only {sorted(pos_a - pos_b)}, maker only {sorted(pos_b - pos_a)}")
                        continue
                first, pool = tiers_of(release, task, key, pos_a | pos_b)
                if first and len(pool) > len(first) and len(pool) > MAX_NEGATIVES and len(first) < MAX_NEGATIVES:
                    # A pooled draw may pass over a first-tier candidate; a tier-by-tier one never does.
                    wider["eligible"] += 1
                    wider["coreb"] += not first <= neg_a
                    wider["maker"] += not first <= neg_b
                if task == "code2code" and key[0] == "cross_lang":
                    # The maker may draw an earlier translation: coreb's positive (listed above).
                    drawn = neg_b & pos_a
                    listed["cross_lang_translation_drawn_as_negative"] += len(drawn)
                    pool_b = candidates(release, task, key, pos_b)
                    bad_b = neg_b - pool_b
                else:
                    bad_b = neg_b - pool
                if bad_b:
                    problems.append(f"{where}: the maker's hard negatives {sorted(bad_b)} are not among the candidates")
                if neg_a - pool:
                    problems.append(f"{where}: coreb's hard negatives {sorted(neg_a - pool)} are not among the candidates")
                expected = min(MAX_NEGATIVES, len(pool))
                if task == "code2code" and key[0] == "cross_lang":
                    expected_b = min(MAX_NEGATIVES, len(candidates(release, task, key, pos_b)))
                else:
                    expected_b = expected
                if (len(neg_a), len(neg_b)) != (expected, expected_b):
                    problems.append(f"{where}: {len(neg_a)} hard negatives in coreb, {len(neg_b)} in the maker's, {expected} candidates to draw")
    # Both draw from the pooled tiers: where a draw could pass over a first-tier candidate,
    # coreb's sometimes does, as the maker's does (tier-by-tier draws never do).
    if wider["eligible"] >= 10 and (wider["coreb"] == 0) != (wider["maker"] == 0):
        problems.append(f"hard negatives: of {wider['eligible']} queries whose pool is wider than its first tier, coreb passes over a first-tier candidate in {wider['coreb']}, the maker in {wider['maker']}")
    listed_draws = dict(wider)
    return problems, dict(listed), {"queries": counts, "pooled_draws": listed_draws}


def main():
    release, artifacts, work, cap = Release(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
    work.mkdir(parents=True, exist_ok=True)
    made = run_maker(maker_inputs(release, artifacts, work), work, cap)
    problems, listed, counts = compare(release, made) if len(sys.argv) < 6 else ([], {}, None)
    report = {"composition": release.composition, "listed_differences": listed, "counts": counts, "problems": problems}
    if len(sys.argv) >= 6:
        uncapped = json.loads(Path(sys.argv[5]).read_text(encoding="utf-8"))["counts"]["queries"]["text2code"]["coreb"]
        ours = Counter(f"{q['subtask']}_{q['language_constraint']}" for q in release.queries["text2code"])
        theirs = Counter(q["subtask"].removeprefix("t2c_") for q in made["text2code"][0])
        capped = {}
        for subtask, n in sorted(uncapped.items()):
            if not subtask.startswith("search_"):
                continue
            want = min(cap, n)
            capped[subtask] = {"candidates": n, "coreb": ours[subtask], "maker": theirs[subtask]}
            if ours[subtask] != want:
                problems.append(f"text2code {subtask}: coreb holds {ours[subtask]} queries, min(cap {cap}, {n} candidates) = {want}")
        report["capped"] = capped
    print(json.dumps(report, indent=1, sort_keys=True))
    if problems:
        print(f"{len(problems)} difference(s) the issue does not list:\n" + "\n".join(problems), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
