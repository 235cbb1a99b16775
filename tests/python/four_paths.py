#!/usr/bin/env python3
"""Score one TREC run of a release's tasks with the standard Python clients, at their defaults.

Usage: four_paths.py <release> <run.trec>

For every task folder (BEIR layout) of the release:
- pytrec_eval: RelevanceEvaluator on the BEIR qrels (`qrels/test.tsv`) at its default
  relevance level, measures ndcg_cut.10, map_cut.10, recall.10;
- BEIR: GenericDataLoader loads the folder, EvaluateRetrieval.evaluate scores each query
  (called one query at a time, since BEIR only returns means).
Prints one JSON object: {"pytrec_eval": {qid: [ndcg@10, map@10, recall@10]}, "beir": {...}}.
"""
import json
import logging
import os
import sys
from collections import defaultdict

import pytrec_eval
from beir.datasets.data_loader import GenericDataLoader
from beir.retrieval.evaluation import EvaluateRetrieval

TASKS = ["text2code", "code2code", "code2text"]


def read_run(path):
    run = defaultdict(dict)
    with open(path, encoding="utf-8") as f:
        for line in f:
            qid, _, doc, _, score, _ = line.split()
            run[qid][doc] = float(score)
    return run


def main():
    logging.disable(logging.INFO)
    release, run_path = sys.argv[1], sys.argv[2]
    run = read_run(run_path)
    out = {"pytrec_eval": {}, "beir": {}}
    for task in TASKS:
        folder = os.path.join(release, task)
        corpus, queries, qrels = GenericDataLoader(data_folder=folder).load(split="test")
        results = {qid: dict(run[qid]) for qid in qrels if qid in run}
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map_cut.10", "recall.10"})
        for qid, m in evaluator.evaluate(results).items():
            out["pytrec_eval"][qid] = [m["ndcg_cut_10"], m["map_cut_10"], m["recall_10"]]
        for qid in results:
            ndcg, _map, recall, _ = EvaluateRetrieval.evaluate({qid: qrels[qid]}, {qid: dict(results[qid])}, [10])
            out["beir"][qid] = [ndcg["NDCG@10"], _map["MAP@10"], recall["Recall@10"]]
        print(f"{task}: {len(corpus)} documents, {len(queries)} queries, {len(results)} ranked", file=sys.stderr)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
