#!/usr/bin/env python3
"""A training and a test release made from the sample, and the reranker's records checked.

Usage:
  reranker_train.py prepare <release> <train_dir> <test_dir>
      <train_dir>/<version>: the release with the first half of its problems, MANIFEST
      `purpose.role = "training"`; <test_dir>/<version>: the other half, `purpose.role =
      "test"` naming the training release. What `coreb export --layout reranker-train` reads is
      filtered (the task folders, the graded qrels, problems.parquet).
  reranker_train.py check <export> <train_release> <test_release>
      Loads the export with `datasets` and checks every record against the training release:
      per positive one positive (`yes`), one hard negative (judged 1 for the query) and one easy
      negative (another problem's document), both `no`; no problem of the test release appears.
Prints one JSON object of counts; exits non-zero on any mismatch.
"""
import collections
import hashlib
import json
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from jsonl_files import jsonl, write_jsonl

TASKS = ["text2code", "code2code", "code2text"]


def keep_problems(src, dst, keep, purpose):
    shutil.copytree(src, dst)
    for task in TASKS:
        folder = dst / task
        queries = [q for q in jsonl(folder / "queries.jsonl") if q["source_problem_id"] in keep]
        write_jsonl(folder / "queries.jsonl", queries)
        docs = [d for d in jsonl(folder / "corpus.jsonl") if d["problem_id"] in keep]
        write_jsonl(folder / "corpus.jsonl", docs)
        ids = {q["_id"] for q in queries}
        table = pq.read_table(dst / f"{task}_qrels.parquet")
        mask = pa.array([q in ids for q in table.column("query_id").to_pylist()])
        pq.write_table(table.filter(mask), dst / f"{task}_qrels.parquet")
    problems = pq.read_table(dst / "problems.parquet")
    mask = pa.array([p in keep for p in problems.column("id").to_pylist()])
    pq.write_table(problems.filter(mask), dst / "problems.parquet")
    manifest = json.loads((dst / "MANIFEST.json").read_text(encoding="utf-8"))
    manifest["purpose"] = purpose
    # The MANIFEST lists what the filtered release holds: it is an intact release of its own
    # (coreb refuses to export a damaged one).
    for name, entry in manifest["files"].items():
        data = (dst / name).read_bytes()
        entry["sha256"] = hashlib.sha256(data).hexdigest()
        entry["bytes"] = len(data)
    (dst / "MANIFEST.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def prepare(release, train_dir, test_dir):
    release = Path(release)
    ids = sorted(pq.read_table(release / "problems.parquet").column("id").to_pylist())
    half = len(ids) // 2
    train = Path(train_dir) / release.name
    test = Path(test_dir) / release.name
    keep_problems(release, train, set(ids[:half]), {"role": "training"})
    sha = hashlib.sha256((train / "MANIFEST.json").read_bytes()).hexdigest()
    keep_problems(release, test, set(ids[half:]), {
        "role": "test",
        "training_releases": [{"version": release.name, "manifest_sha256": sha}],
    })
    print(json.dumps({"train": ids[:half], "test": ids[half:]}))


def check(export, train, test):
    from datasets import load_dataset

    train, test = Path(train), Path(test)
    records = load_dataset(str(export), split="train")
    assert set(records.column_names) >= {"instruction", "query", "document", "label"}, records.column_names
    test_problems = set(pq.read_table(test / "problems.parquet").column("id").to_pylist())
    train_problems = set(pq.read_table(train / "problems.parquet").column("id").to_pylist())
    assert test_problems and not test_problems & train_problems
    graded, problem_of, text_of = {}, {}, {}
    for task in TASKS:
        for r in pq.read_table(train / f"{task}_qrels.parquet").to_pylist():
            graded[(r["query_id"], r["doc_id"])] = r["relevance"]
        for d in jsonl(train / task / "corpus.jsonl"):
            problem_of[d["_id"]] = d["problem_id"]
            text_of[d["_id"]] = d["text"]
    by_positive = collections.defaultdict(list)
    instructions = collections.defaultdict(set)
    for r in records:
        assert r["label"] in ("yes", "no"), r["label"]
        assert r["problem_id"] not in test_problems, r["problem_id"]
        assert problem_of[r["doc_id"]] not in test_problems, r["doc_id"]
        assert r["document"] == text_of[r["doc_id"]], r["doc_id"]
        by_positive[(r["task"], r["query_id"], r["positive_id"])].append(r)
        instructions[r["task"]].add(r["instruction"])
    assert all(len(v) == 1 for v in instructions.values()), instructions
    assert len(set().union(*instructions.values())) == 3, instructions
    kinds = collections.Counter()
    for (task, qid, pos), rs in by_positive.items():
        got = sorted((r["kind"], r["label"]) for r in rs)
        assert got == [("easy_negative", "no"), ("hard_negative", "no"), ("positive", "yes")], (qid, pos, got)
        for r in rs:
            rel = graded.get((qid, r["doc_id"]), 0)
            if r["kind"] == "positive":
                assert rel == 2 and r["doc_id"] == pos, (qid, r["doc_id"], rel)
            elif r["kind"] == "hard_negative":
                assert rel == 1, (qid, r["doc_id"], rel)
            else:
                assert rel == 0 and problem_of[r["doc_id"]] != r["problem_id"], (qid, r["doc_id"])
            kinds[r["kind"]] += 1
    assert kinds["positive"] > 20, kinds
    print(json.dumps({"records": len(records), "positives": kinds["positive"],
                      "tasks": sorted(instructions)}))


if __name__ == "__main__":
    {"prepare": prepare, "check": check}[sys.argv[1]](*sys.argv[2:])
