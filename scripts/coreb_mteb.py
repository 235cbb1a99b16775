"""MTEB tasks for a coreb release: no glue code, no download.

    import mteb, sys
    sys.path.insert(0, "<coreb>/scripts")
    from coreb_mteb import coreb_tasks

    results = mteb.evaluate(model, coreb_tasks("releases/sample/v202503"))

Each task folder of a release (`text2code/`, `code2code/`, `code2text/`) carries a README
whose configs `corpus`, `queries` and `default` (the positives-only qrels) are what MTEB's
retrieval loader reads, so a task is only its metadata: `dataset.path` is the folder.
nDCG@10 from MTEB equals `coreb eval <release> --run <run>` on MTEB's own predictions
(tests/python/zero_glue.py, tests/zero_glue.rs).
"""
import json
from pathlib import Path

from mteb.abstasks.retrieval import AbsTaskRetrieval
from mteb.abstasks.task_metadata import TaskMetadata

TASKS = ("text2code", "code2code", "code2text")
LANGS = ["python-Code", "c++-Code", "java-Code", "go-Code", "ruby-Code"]
DESCRIPTIONS = {
    "text2code": "Find the solutions of a programming problem from its statement, summary or a search query.",
    "code2code": "Find solutions of the same problem (other languages or models) from one solution.",
    "code2text": "Find the true statement of a problem among distractors from one of its solutions.",
}


def coreb_task(release, task):
    """The MTEB retrieval task of one task folder of a coreb release."""
    if task not in TASKS:
        raise ValueError(f"unknown CoREB task `{task}` (one of {', '.join(TASKS)})")
    release = Path(release).resolve()
    manifest = json.loads((release / "MANIFEST.json").read_text(encoding="utf-8"))
    version, window = manifest["version"], manifest["window"]
    langs = LANGS if task == "code2code" else ["eng-Latn", *LANGS]
    metadata = TaskMetadata(
        name=f"CoREB-{task}",
        description=DESCRIPTIONS[task],
        reference="https://github.com/hq-bench/coreb",
        dataset={"path": str(release / task), "revision": version},
        type="Retrieval",
        category="t2t",
        modalities=["text"],
        eval_splits=["test"],
        eval_langs=langs,
        main_score="ndcg_at_10",
        date=(window["start"], window["end"]),
        domains=["Programming"],
        task_subtypes=["Code retrieval"],
        license="not specified",
        annotations_creators="derived",
        dialect=[],
        sample_creation="created",
        bibtex_citation="",
    )
    return type(f"CoREB_{task}", (AbsTaskRetrieval,), {"metadata": metadata})()


def coreb_tasks(release):
    """The three CoREB tasks of a release folder, for `mteb.evaluate`."""
    return [coreb_task(release, t) for t in TASKS]
