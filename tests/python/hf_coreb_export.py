#!/usr/bin/env python3
"""Load `coreb export --layout hf-coreb` output the way code written for the published CoREB
dataset (hq-bench/coreb) does: `load_dataset(<export>, <config>, split="release_<version>")`.

Usage: hf_coreb_export.py <export> <release_v...> <release dir>

Checks the eight configs and their one split per release, the published column names and
subtask names (listed below), that each config holds the release's rows, and the card's
metadata. Prints {"configs": {config: rows}, "subtasks": {task: [...]}}; exits non-zero on a
mismatch.
"""
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
from datasets import get_dataset_config_names, get_dataset_split_names, load_dataset

CONFIGS = ["code_corpus", "text_corpus", "text2code_queries", "text2code_qrels",
           "code2code_queries", "code2code_qrels", "code2text_queries", "code2text_qrels"]
LANGS = ["python", "cpp", "java", "go", "ruby"]
# The columns code written for the published dataset reads (coreb_runner/benchmark/data_loader.py,
# notebooks/01_download_and_analyze_data.ipynb of hq-bench/coreb).
PUBLISHED_COLUMNS = {
    "code_corpus": ["code_id", "code", "language", "model", "problem_id"],
    "text_corpus": ["text_id", "text"],
    "queries": ["query_id", "query", "split", "subtask", "language_constraint"],
    "qrels": ["query_id", "doc_id", "relevance"],
}
# The published subtask names (coreb_runner/runners/query_corpus_dataset_maker.py).
PUBLISHED_SUBTASKS = {
    "text2code": {f"t2c_{kind}_{lang}" for kind in ("canonical_retro", "full_retro", "search") for lang in ["any", *LANGS]},
    "code2code": {"c2c_mono_lang", "c2c_cross_lang", "c2c_cross_model"},
    "code2text": {f"c2t_full_retro_{lang}" for lang in LANGS},
}


def main():
    export, split, release = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    configs = get_dataset_config_names(str(export))
    assert sorted(configs) == sorted(CONFIGS), configs
    rows, subtasks = {}, {}
    # The call the issue names first.
    code = load_dataset(str(export), "code_corpus", split=split)
    assert code.num_rows == pq.read_metadata(release / "code_corpus.parquet").num_rows
    for c in CONFIGS:
        assert get_dataset_split_names(str(export), c) == [split], (c, get_dataset_split_names(str(export), c))
        ds = load_dataset(str(export), c, split=split)
        kind = c if c in PUBLISHED_COLUMNS else c.rsplit("_", 1)[1]
        missing = [col for col in PUBLISHED_COLUMNS[kind] if col not in ds.column_names]
        assert not missing, f"{c}: no published column(s) {missing} in {ds.column_names}"
        assert ds.num_rows == pq.read_metadata(release / f"{c}.parquet").num_rows, c
        if kind == "queries":
            task = c.removesuffix("_queries")
            assert set(ds["split"]) == {task}, (c, set(ds["split"]))
            names = set(ds["subtask"])
            assert names <= PUBLISHED_SUBTASKS[task], f"{c}: not published names: {sorted(names - PUBLISHED_SUBTASKS[task])}"
            # Ids and texts are the release's: only the names change.
            src = pq.read_table(release / f"{c}.parquet")
            assert ds["query_id"] == src.column("query_id").to_pylist() and ds["query"] == src.column("query").to_pylist(), c
            subtasks[task] = sorted(names)
        rows[c] = ds.num_rows
    card = (export / "README.md").read_text(encoding="utf-8")
    front = card.split("---\n")[1]
    for key in ("pretty_name:", "license: other", "license_name:", "license_link: LICENSE", "size_categories:", "dataset_info:"):
        assert key in front, f"card front matter lacks {key}"
    license_text = (export / "LICENSE").read_text(encoding="utf-8")
    assert "AtCoder" in license_text or "LeetCode" in license_text or "Codeforces" in license_text, "LICENSE names no platform"
    print(json.dumps({"configs": rows, "subtasks": subtasks}))


if __name__ == "__main__":
    main()
