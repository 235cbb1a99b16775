#!/usr/bin/env python3
"""Load a coreb release the way its users do, and check it is consistent.

Usage: scripts/read_release.py releases/<version>

- every Parquet config with pandas.read_parquet (pyarrow);
- every BEIR folder with plain json / csv readers (corpus.jsonl, queries.jsonl, qrels/test.tsv);
- checks: qrels point to existing queries and documents, every query has a relevance-2
  document, the Parquet and BEIR views agree (BEIR qrels = the relevance-2 rows; the
  code2code BEIR corpus = code_corpus without the anchors that no code2code query judges), and
  MANIFEST.json's sha256 match the files.
Prints one line per config and exits non-zero on any inconsistency.
"""
import csv
import hashlib
import json
import os
import sys

import pandas as pd

CONFIGS = ["code_corpus", "text_corpus", "text2code_queries", "text2code_qrels",
           "code2code_queries", "code2code_qrels", "code2text_queries", "code2text_qrels"]
TASKS = {"text2code": "code_corpus", "code2code": "code_corpus", "code2text": "text_corpus"}


def fail(msg: str) -> None:
    print(f"FAIL: {msg}")
    sys.exit(1)


def main() -> None:
    root = sys.argv[1]
    frames = {}
    for c in CONFIGS:
        df = pd.read_parquet(os.path.join(root, f"{c}.parquet"))
        frames[c] = df
        print(f"{c:<20} {len(df):>6} rows  columns: {', '.join(df.columns)}")
    code_ids = set(frames["code_corpus"]["code_id"])
    text_ids = set(frames["text_corpus"]["text_id"])
    for task, corpus in TASKS.items():
        docs = code_ids if corpus == "code_corpus" else text_ids
        queries = frames[f"{task}_queries"]
        qrels = frames[f"{task}_qrels"]
        qids = set(queries["query_id"])
        if task == "code2code":
            # The code2code corpus leaves out the anchors no query judges (a query's own
            # document is never judged for it; with the series' cross_lang, an anchor can be
            # another query's positive, and stays).
            docs = docs - (set(queries["source_doc_id"].dropna()) - set(qrels["doc_id"]))
            own = set(zip(queries["query_id"], queries["source_doc_id"]))
            if own & set(zip(qrels["query_id"], qrels["doc_id"])):
                fail("code2code: a query judges its own document")
        if not set(qrels["query_id"]) <= qids:
            fail(f"{task}: qrels name unknown queries")
        if not set(qrels["doc_id"]) <= docs:
            fail(f"{task}: qrels name unknown documents")
        positives = set(qrels[qrels["relevance"] == 2]["query_id"])
        if positives != qids:
            fail(f"{task}: {len(qids - positives)} queries without a relevance-2 document")
        # The BEIR view, read with the standard library only.
        folder = os.path.join(root, task)
        with open(os.path.join(folder, "corpus.jsonl"), encoding="utf-8") as f:
            beir_docs = {json.loads(line)["_id"] for line in f}
        with open(os.path.join(folder, "queries.jsonl"), encoding="utf-8") as f:
            beir_queries = {json.loads(line)["_id"] for line in f}
        with open(os.path.join(folder, "qrels", "test.tsv"), encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        relevant = qrels[qrels["relevance"] == 2]
        beir_pairs = {(r["query-id"], r["corpus-id"]) for r in rows}
        if beir_docs != docs or beir_queries != qids or beir_pairs != set(zip(relevant["query_id"], relevant["doc_id"])):
            fail(f"{task}: the BEIR folder and the Parquet configs disagree")
        grades = sorted({int(r["score"]) for r in rows})
        print(f"{task:<20} {len(qids):>6} queries, {len(rows)} BEIR qrels (grades {grades}), "
              f"{len(qrels)} graded qrels, {len(docs)} documents")
    with open(os.path.join(root, "MANIFEST.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    for path, entry in manifest["files"].items():
        with open(os.path.join(root, path), "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() != entry["sha256"]:
                fail(f"{path}: sha256 differs from MANIFEST.json")
    print(f"MANIFEST.json: {len(manifest['files'])} files match")
    print("release loads and is consistent")


if __name__ == "__main__":
    main()
