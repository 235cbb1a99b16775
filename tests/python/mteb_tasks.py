#!/usr/bin/env python3
"""MTEB's own CoREB(v1) tasks on a release exported by `coreb export --layout mteb`.

Usage: mteb_tasks.py <export>/<version> <out_dir>

Runs the six task classes of the pinned mteb (`scripts/coreb_mteb.py` points only their
`metadata.dataset` at the export) with the hashing bag-of-words encoder of zero_glue.py, saves
MTEB's predictions and writes each task's as a TREC run, `<out_dir>/<task>.run.trec`.
Prints one JSON object: {task: {"folder", "run", "main_score", "ndcg_at_10", "map_at_10",
"recall_at_10", "queries", "candidates"}}.
"""
import json
import logging
import sys
from pathlib import Path

from datasets import get_dataset_config_names

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(HERE))

from zero_glue import hashing_model  # noqa: E402


def main():
    logging.disable(logging.WARNING)
    import mteb
    from coreb_mteb import MTEB_TASKS, mteb_tasks

    release, out_dir = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    tasks = mteb_tasks(release)
    # MTEB's own classes, only the dataset moved.
    for t in tasks:
        own = mteb.get_task(t.metadata.name)
        assert type(t) is type(own), (type(t), type(own))
        assert t.metadata.model_copy(update={"dataset": own.metadata.dataset}) == own.metadata, t.metadata.name
        assert t.metadata.dataset["path"] == str(release / t.metadata.name)
    # What MTEB's loader reads of each folder (MTEB unloads it after evaluating).
    loaded = {}
    for t in tasks:
        name = t.metadata.name
        t.load_data()
        split = t.dataset["default"]["test"]
        configs = sorted(get_dataset_config_names(str(release / name)))
        top, qrels = split["top_ranked"], split["relevant_docs"]
        assert {s for docs in qrels.values() for s in docs.values()} <= {0, 2}, name
        if t.metadata.type == "Reranking":
            assert configs == ["corpus", "default", "queries", "top_ranked"], configs
            assert top and all(set(qrels[q]) == set(docs) for q, docs in top.items()), name
        loaded[name] = (len(qrels), None if top is None else sorted({len(d) for d in top.values()}))
    preds = out_dir / "predictions"
    results = mteb.evaluate(hashing_model(), tasks, cache=None, prediction_folder=preds)
    report = {}
    for r in results.task_results:
        name = r.task_name
        scores = r.scores["test"][0]
        folder = release / name
        pred = json.loads((preds / f"{name}_predictions.json").read_text(encoding="utf-8"))
        run = out_dir / f"{name}.run.trec"
        with open(run, "w", encoding="utf-8") as f:
            for qid, docs in pred["default"]["test"].items():
                ranked = sorted(docs.items(), key=lambda kv: (-kv[1], kv[0]))
                for rank, (doc, score) in enumerate(ranked, 1):
                    f.write(f"{qid} Q0 {doc} {rank} {score!r} mteb\n")
        report[name] = {
            "folder": str(folder),
            "run": str(run),
            "main_score": scores["main_score"],
            "ndcg_at_10": scores["ndcg_at_10"],
            "map_at_10": scores["map_at_10"],
            "recall_at_10": scores["recall_at_10"],
            "queries": loaded[name][0],
            "candidates": loaded[name][1],
        }
    assert sorted(report) == sorted(MTEB_TASKS), sorted(report)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
