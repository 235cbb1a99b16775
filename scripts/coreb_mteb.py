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

MTEB's own CoREB(v1) tasks (`CorebT2CRetrieval` ... `CorebC2TReranking`, the names results
reach MTEB's leaderboard under) on a release exported by `coreb export --layout mteb`:

    from coreb_mteb import mteb_tasks, mteb_tasks_by_release
    results = mteb.evaluate(model, mteb_tasks("<export>/v202503"))
    for version, tasks in mteb_tasks_by_release("<export>").items(): ...

Each is the object `mteb.get_task` gives, with only `metadata.dataset` pointed at the task
folder (its path, and the release's version as revision): MTEB's prompts, main scores and
evaluation are its own. Evaluate one release at a time (`cache=None`, or a cache per
release): the tasks of two releases have the same names.
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


MTEB_TASKS = ("CorebT2CRetrieval", "CorebC2CRetrieval", "CorebC2TRetrieval",
              "CorebT2CReranking", "CorebC2CReranking", "CorebC2TReranking")


def mteb_task(release_export, name):
    """MTEB's own task `name` pointed at its folder in an exported release
    (`<export>/<version>/<name>/`): only `metadata.dataset` changes."""
    import mteb

    if name not in MTEB_TASKS:
        raise ValueError(f"unknown CoREB(v1) task `{name}` (one of {', '.join(MTEB_TASKS)})")
    release_export = Path(release_export).resolve()
    folder = release_export / name
    if not (folder / "mteb_task.json").is_file():
        raise FileNotFoundError(
            f"{folder} is no task folder of `coreb export --layout mteb` (no mteb_task.json)")
    version = json.loads((folder / "mteb_task.json").read_text(encoding="utf-8"))["release"]
    task = mteb.get_task(name)
    task.metadata = task.metadata.model_copy(
        update={"dataset": {"path": str(folder), "revision": version}})
    return task


def mteb_tasks(release_export, names=MTEB_TASKS):
    """MTEB's six CoREB(v1) tasks (or `names`) of one exported release, for `mteb.evaluate`."""
    return [mteb_task(release_export, n) for n in names]


def mteb_tasks_by_release(export, names=MTEB_TASKS):
    """{version: tasks} for every release of an export (`coreb export --layout mteb <releases>`)."""
    export = Path(export).resolve()
    releases = sorted(d for d in export.iterdir() if (d / "MANIFEST.json").is_file())
    if not releases:
        raise FileNotFoundError(f"{export} holds no exported release (no <version>/MANIFEST.json)")
    return {d.name: mteb_tasks(d, names) for d in releases}
