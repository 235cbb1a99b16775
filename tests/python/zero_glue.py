#!/usr/bin/env python3
"""Load a coreb release with the clients users have, with no glue code (issue #15).

Usage: zero_glue.py <release> <out_dir>

- Hugging Face `datasets`: `load_dataset(<release>)` (the default config), every named config
  (compared with pyarrow's reading of the Parquet file), and in every task folder the configs
  `corpus`, `queries`, `default` (compared with the BEIR files);
- BEIR: `GenericDataLoader(<task folder>).load("test")`;
- MTEB: `mteb.evaluate` of a hashing bag-of-words encoder (written here: no download) on
  `scripts/coreb_mteb.py`'s tasks, with MTEB's own predictions saved and written as one TREC
  run, `<out_dir>/mteb.run.trec`.
Prints one JSON object: {"mteb_ndcg_at_10": {task: score}, "checked": [...], "run": path}.
Exits non-zero (an AssertionError naming what differs) on any mismatch.
"""
import hashlib
import json
import logging
import re
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from datasets import get_dataset_config_names, load_dataset

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

CONFIGS = ["code_corpus", "text_corpus", "text2code_queries", "text2code_qrels",
           "code2code_queries", "code2code_qrels", "code2text_queries", "code2text_qrels"]
TASKS = ["text2code", "code2code", "code2text"]
DIM = 4096


def jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def check_datasets(release, checked):
    configs = get_dataset_config_names(str(release))
    assert sorted(configs) == sorted(CONFIGS), f"release configs: {configs}"
    default = load_dataset(str(release))
    assert list(default) == ["test"], f"default config splits: {list(default)}"
    code = pq.read_table(release / "code_corpus.parquet")
    assert default["test"].column_names == code.column_names, default["test"].column_names
    assert default["test"]["code_id"] == code.column("code_id").to_pylist(), "default config is not code_corpus"
    checked.append("load_dataset(<release>) = code_corpus")
    for c in CONFIGS:
        ds = load_dataset(str(release), c, split="test")
        table = pq.read_table(release / f"{c}.parquet")
        assert ds.column_names == table.column_names, f"{c}: {ds.column_names} vs {table.column_names}"
        assert ds.num_rows == table.num_rows, f"{c}: {ds.num_rows} rows vs {table.num_rows}"
        first = table.column_names[0]
        assert ds[first] == table.column(first).to_pylist(), f"{c}: {first} differs"
        checked.append(f"load_dataset(<release>, {c!r})")
    # The source problems (Zstandard pages, tests as lists of structs), as a plain Parquet file.
    problems = load_dataset("parquet", data_files=str(release / "problems.parquet"), split="train")
    table = pq.read_table(release / "problems.parquet")
    assert problems.num_rows == table.num_rows > 0, f"problems: {problems.num_rows} rows vs {table.num_rows}"
    assert problems["id"] == table.column("id").to_pylist(), "problems: ids differ"
    assert [len(t) for t in problems["private_tests"]] == [len(t) for t in table.column("private_tests").to_pylist()], "problems: tests differ"
    checked.append("load_dataset('parquet', <release>/problems.parquet)")
    for task in TASKS:
        folder = release / task
        configs = get_dataset_config_names(str(folder))
        assert sorted(configs) == ["corpus", "default", "queries"], f"{task} configs: {configs}"
        corpus = load_dataset(str(folder), "corpus", split="test")
        queries = load_dataset(str(folder), "queries", split="test")
        qrels = load_dataset(str(folder))["test"]
        assert {"_id", "title", "text"} <= set(corpus.column_names), corpus.column_names
        assert {"_id", "text"} <= set(queries.column_names), queries.column_names
        assert qrels.column_names == ["query-id", "corpus-id", "score"], qrels.column_names
        assert corpus["_id"] == [d["_id"] for d in jsonl(folder / "corpus.jsonl")], f"{task}: corpus ids"
        assert queries["_id"] == [q["_id"] for q in jsonl(folder / "queries.jsonl")], f"{task}: query ids"
        with open(folder / "qrels/test.tsv", encoding="utf-8") as f:
            tsv = [tuple(line.rstrip("\n").split("\t")) for line in f][1:]
        rows = [(r["query-id"], r["corpus-id"], str(r["score"])) for r in qrels]
        assert rows == tsv, f"{task}: the default config differs from qrels/test.tsv"
        checked.append(f"load_dataset(<release>/{task}[, corpus|queries])")


def check_beir(release, checked):
    from beir.datasets.data_loader import GenericDataLoader

    for task in TASKS:
        folder = release / task
        corpus, queries, qrels = GenericDataLoader(str(folder)).load(split="test")
        assert len(corpus) == len(jsonl(folder / "corpus.jsonl")), f"{task}: BEIR corpus"
        assert len(queries) == len({q for q in qrels}), f"{task}: BEIR queries"
        assert all(s == 2 for docs in qrels.values() for s in docs.values()), f"{task}: BEIR qrels"
        checked.append(f"GenericDataLoader(<release>/{task})")


def embed(text):
    v = np.zeros(DIM, dtype=np.float32)
    for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*|\d+", text.lower()):
        v[int.from_bytes(hashlib.sha256(w.encode()).digest()[:4], "little") % DIM] += 1.0
    return v


def hashing_model():
    from mteb.models.model_meta import ModelMeta
    from mteb.similarity_functions import cos_sim, pairwise_cos_sim

    class HashingBow:
        """Bag of words hashed into 4096 dimensions, cosine similarity: deterministic, offline."""

        mteb_model_meta = ModelMeta.create_empty(overwrites={"name": "coreb-test/hashing-bow", "revision": "1"})

        def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs):
            return np.stack([embed(t) for batch in inputs for t in batch["text"]])

        def similarity(self, a, b):
            return cos_sim(a, b)

        def similarity_pairwise(self, a, b):
            return pairwise_cos_sim(a, b)

    return HashingBow()


def check_mteb(release, out_dir, checked):
    import mteb
    from coreb_mteb import coreb_tasks

    preds = out_dir / "predictions"
    results = mteb.evaluate(hashing_model(), coreb_tasks(release), cache=None, prediction_folder=preds)
    scores = {}
    for r in results.task_results:
        task = r.task_name.removeprefix("CoREB-")
        scores[task] = r.scores["test"][0]["ndcg_at_10"]
    assert sorted(scores) == sorted(TASKS), scores
    run = out_dir / "mteb.run.trec"
    with open(run, "w", encoding="utf-8") as f:
        for task in TASKS:
            pred = json.loads((preds / f"CoREB-{task}_predictions.json").read_text(encoding="utf-8"))
            for qid, docs in pred["default"]["test"].items():
                ranked = sorted(docs.items(), key=lambda kv: (-kv[1], kv[0]))
                for rank, (doc, score) in enumerate(ranked, 1):
                    f.write(f"{qid} Q0 {doc} {rank} {score!r} mteb\n")
    checked.append("mteb.evaluate(coreb_tasks(<release>))")
    return scores, run


def main():
    logging.disable(logging.WARNING)
    release, out_dir = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    checked = []
    check_datasets(release, checked)
    check_beir(release, checked)
    scores, run = check_mteb(release, out_dir, checked)
    print(json.dumps({"mteb_ndcg_at_10": scores, "checked": checked, "run": str(run)}))


if __name__ == "__main__":
    main()
