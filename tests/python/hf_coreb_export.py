#!/usr/bin/env python3
"""Load `coreb export --layout hf-coreb` output the way code written for the published CoREB
dataset (hq-bench/coreb) does: `load_dataset(<export>, <config>, split="release_vYYMM")`, the
series' split names (`release_v2603` in its README).

Usage: hf_coreb_export.py <export> <release_vYYMM> <release dir>

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
# The columns of the published dataset's rows (hq-bench/coreb:
# coreb_runner/runners/query_corpus_dataset_maker.py writes them; coreb_runner/benchmark/data_loader.py
# and notebooks/01_download_and_analyze_data.ipynb read them).
PUBLISHED_COLUMNS = {
    "code_corpus": ["code_id", "code", "language", "model", "meta"],
    "text_corpus": ["text_id", "text", "meta"],
    "text2code_queries": ["query_id", "query", "split", "subtask", "query_type", "sub_query_type", "language_constraint", "meta"],
    "code2code_queries": ["query_id", "query", "split", "subtask", "anchor_language", "anchor_model", "meta"],
    # c2t_match rows carry `code`, `text_id`, `label`, `text_type` (and `text`) instead of a retrieval query.
    "code2text_queries": ["query_id", "query", "split", "subtask", "anchor_language", "anchor_model", "meta",
                          "code", "text_id", "label", "text_type"],
    "qrels": ["query_id", "doc_id", "relevance"],
}
STAMPS = {"created_at", "generator_version"}
PUBLISHED_META = {
    "code_corpus": {"source_problem_id", "passed"},
    "text_corpus": {"source_problem_id", "is_noise_sample", "original_problem_id"},
    "text2code_queries": {"source_problem_id", "original_query_type", "num_relevant_docs", "models_in_relevant_docs",
                          "is_multi_model"} | STAMPS,
    "code2code_queries": {"source_problem_id", "anchor_code_id", "target_languages", "num_target_solutions"} | STAMPS,
    "code2text_queries": {"source_problem_id", "anchor_code_id", "task_type", "text_type", "available_languages",
                          "pair_type", "negative_problem_id"} | STAMPS,
}
# The sub_query_type values of search queries (the series': the maker's mapping of the query
# generator's types; coreb keeps `title_search` where the maker folds it into algorithm_search).
SEARCH_TYPES = {"title_search", "description_search", "algorithm_search"}
# The published subtask names (query_corpus_dataset_maker.py); every one must be present.
PUBLISHED_SUBTASKS = {
    "text2code": {f"t2c_{kind}_{lang}" for kind in ("canonical_retro", "full_retro", "search") for lang in ["any", *LANGS]},
    "code2code": {"c2c_mono_lang", "c2c_cross_lang", "c2c_cross_model"},
    "code2text": {f"c2t_{kind}_{lang}" for kind in ("full_retro", "canonical_retro") for lang in ["any", *LANGS]} | {"c2t_match"},
}


def manifest(release):
    return json.loads((release / "MANIFEST.json").read_text(encoding="utf-8"))


def manifest_created_at(release):
    return manifest(release)["window"]["end"] + "T23:59:59Z"


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
        kind = c if c in PUBLISHED_COLUMNS else "qrels"
        missing = [col for col in PUBLISHED_COLUMNS[kind] if col not in ds.column_names]
        assert not missing, f"{c}: no published column(s) {missing} in {ds.column_names}"
        if c in PUBLISHED_META:
            assert set(ds.features["meta"].keys()) == PUBLISHED_META[c], (c, ds.features["meta"])
            assert all(m["source_problem_id"] for m in ds["meta"]), c
        src = pq.read_table(release / f"{c}.parquet")
        if c.endswith("_queries"):
            task = c.removesuffix("_queries")
            assert set(ds["split"]) == {task}, (c, set(ds["split"]))
            names = set(ds["subtask"])
            assert names == PUBLISHED_SUBTASKS[task], f"{c}: extra {sorted(names - PUBLISHED_SUBTASKS[task])}, missing {sorted(PUBLISHED_SUBTASKS[task] - names)}"
            assert set(ds["language_constraint"]) <= {"none", *LANGS}, c
            # Every query of the release is there with its id and text; derived code2text ones come after.
            n = src.num_rows
            assert ds["query_id"][:n] == src.column("query_id").to_pylist() and ds["query"][:n] == src.column("query").to_pylist(), c
            assert len(set(ds["query_id"])) == ds.num_rows, f"{c}: query ids repeat"
            subtasks[task] = sorted(names)
            metas = ds["meta"]
            if c in PUBLISHED_META and STAMPS <= PUBLISHED_META[c]:
                # From the release (its window and the coreb that built it), never the clock.
                assert {m["created_at"] for m in metas} == {manifest_created_at(release)}, c
                assert {m["generator_version"] for m in metas} == {"coreb " + manifest(release)["tool_version"]}, c
            if task == "text2code":
                searches = [(q, m) for q, s, m in zip(ds["sub_query_type"], ds["subtask"], metas) if s.startswith("t2c_search_")]
                assert {q for q, _ in searches} == SEARCH_TYPES, {q for q, _ in searches}
                assert all(m["models_in_relevant_docs"] and m["is_multi_model"] == (len(m["models_in_relevant_docs"]) > 1) for _, m in searches), c
            if task == "code2code":
                cross = [m for s, m in zip(ds["subtask"], metas) if s != "c2c_mono_lang"]
                assert all(m["target_languages"] and m["num_target_solutions"] >= 1 for m in cross), c
            if task == "code2text":
                pairs = {m["pair_type"] for s, m in zip(ds["subtask"], metas) if s == "c2t_match"}
                assert pairs == {"positive", "negative_random"}, pairs
                per_language = [m for s, m in zip(ds["subtask"], metas) if s != "c2t_match" and not s.endswith("_any")]
                assert all(m["task_type"] == "cross_language_invariance" and len(m["available_languages"]) >= 2 for m in per_language), c
        elif c.endswith("_qrels"):
            # The release's judgements are all there, unchanged.
            mine = set(zip(*(src.column(k).to_pylist() for k in ("query_id", "doc_id", "relevance"))))
            theirs = set(zip(ds["query_id"], ds["doc_id"], ds["relevance"]))
            assert mine <= theirs, f"{c}: release judgements missing from the export"
            if c == "text2code_qrels" or c == "code2code_qrels":
                assert mine == theirs, c
        else:
            assert ds.num_rows == src.num_rows, c
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
