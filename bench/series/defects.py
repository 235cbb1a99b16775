#!/usr/bin/env python3
"""What the series maker's defects that coreb fixes (no switch) would do to a release's BM25
nDCG@10: the release as coreb built it, beside copies edited to what the maker would have
judged.

Usage: bench/series/defects.py [--release releases/sample/v202503] [--coreb target/debug/coreb]
                               [--python PY]

- `search_per_language_variant`: every language-constrained search query takes the text of
  the unconstrained query it restates (the maker's key parser drops the variant written for
  the language and reuses that text);
- `cross_lang_earlier_translations`: a `cross_lang` query judges only the translations with a
  larger code id (the maker leaves the earlier ones unjudged, or draws them as hard negatives).

Each copy is scored with `coreb eval <copy> --k 10` (BM25). `--python` must have pyarrow and
pandas (the test venv) to edit the Parquet configs.
"""
import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

EDIT = r'''
import json, sys
from pathlib import Path
import pyarrow as pa
import pyarrow.parquet as pq
root, defect = Path(sys.argv[1]), sys.argv[2]


def read(name):
    t = pq.read_table(root / name)
    return t.to_pandas(), t.schema


def write(name, df, schema):
    # The release's own schema (plain UTF-8 strings), which coreb's readers expect.
    pq.write_table(pa.Table.from_pandas(df, schema=schema, preserve_index=False), root / name)


if defect == "search_per_language_variant":
    q, schema = read("text2code_queries.parquet")
    text = dict(zip(q.query_id, q["query"]))
    twin = lambda qid: qid.rsplit("_", 1)[0] + "_any"
    search = (q.subtask == "search") & (q.language_constraint != "any")
    q.loc[search, "query"] = [text[twin(i)] for i in q.loc[search, "query_id"]]
    write("text2code_queries.parquet", q, schema)
    new = dict(zip(q.query_id, q["query"]))
    lines = [json.loads(l) for l in (root / "text2code/queries.jsonl").read_text(encoding="utf-8").splitlines()]
    for l in lines:
        l["text"] = new[l["_id"]]
    (root / "text2code/queries.jsonl").write_text("".join(json.dumps(l, ensure_ascii=False) + "\n" for l in lines), encoding="utf-8")
elif defect == "cross_lang_earlier_translations":
    queries, _ = read("code2code_queries.parquet")
    anchor = dict(zip(queries.query_id, queries.source_doc_id))
    cross = set(queries.query_id[queries.subtask == "cross_lang"])
    r, schema = read("code2code_qrels.parquet")
    earlier = r.query_id.isin(cross) & (r.relevance == 2) & (r.doc_id < r.query_id.map(anchor))
    write("code2code_qrels.parquet", r[~earlier], schema)
    dropped = set(zip(r.query_id[earlier], r.doc_id[earlier]))
    tsv = (root / "code2code/qrels/test.tsv").read_text(encoding="utf-8").splitlines()
    kept = [tsv[0]] + [l for l in tsv[1:] if tuple(l.split("\t")[:2]) not in dropped]
    (root / "code2code/qrels/test.tsv").write_text("\n".join(kept) + "\n", encoding="utf-8")
    jl = [l for l in (root / "code2code/qrels/test.jsonl").read_text(encoding="utf-8").splitlines()
          if (json.loads(l)["query-id"], json.loads(l)["corpus-id"]) not in dropped]
    (root / "code2code/qrels/test.jsonl").write_text("".join(l + "\n" for l in jl), encoding="utf-8")
'''


def ndcg10(coreb, release):
    out = subprocess.run([coreb, "eval", str(release), "--k", "10", "--json"], capture_output=True, text=True, check=True)
    return {t["task"]: t["overall"]["at_k"]["ndcg"][0] for t in json.loads(out.stdout)["tasks"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--release", default=str(ROOT / "releases/sample/v202503"))
    ap.add_argument("--coreb", default=str(ROOT / "target/debug/coreb"))
    ap.add_argument("--python", default=str(ROOT / ".venv/bin/python"))
    args = ap.parse_args()
    base = ndcg10(args.coreb, args.release)
    print("| release | text2code | code2code | code2text |\n|---|---:|---:|---:|")
    print(f"| as built | {base['text2code']:.4f} | {base['code2code']:.4f} | {base['code2text']:.4f} |")
    for defect in ("search_per_language_variant", "cross_lang_earlier_translations"):
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / Path(args.release).name
            shutil.copytree(args.release, copy)
            subprocess.run([args.python, "-c", EDIT, str(copy), defect], check=True)
            s = ndcg10(args.coreb, copy)
        cells = " | ".join(f"{s[t]:.4f} ({s[t] - base[t]:+.4f})" for t in ("text2code", "code2code", "code2text"))
        print(f"| the maker's {defect} | {cells} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
