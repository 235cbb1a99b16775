#!/usr/bin/env python3
"""What each composition switch of `[stages.qrels]` does to a release's BM25 nDCG@10.

Usage: bench/series/effects.py [--manifest manifests/sample.toml] [--coreb target/debug/coreb]
                               [--dir DIR] [--json FILE]

Builds the manifest once as it is (the series' composition, the default), then once per
switch set to its other value, and once with `profile = "coreb"` (coreb's composition before
it followed the series). Every variant shares the first build's artifacts, so only `qrels`
and `release` run again; each publishes into its own releases directory under DIR. Prints,
per variant, the query counts and the BM25 nDCG@10 the release gate measured (the MANIFEST's
`counts.bm25_ndcg10`), and the change from the default. These are the figures of
`docs/reference-vs-coreb.md`.
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TASKS = ("text2code", "code2code", "code2text")
# (name, lines added to [stages.qrels], checks to waive)
VARIANTS = [
    ("series (default)", "", []),
    ("search_positives = passing", 'search_positives = "passing"', []),
    ("hard_negatives = tiered", 'hard_negatives = "tiered"', []),
    ("cross_lang = anchor", 'cross_lang = "anchor"', []),
    ("code2text = describe", 'code2text = "describe"', []),
    ("code2text_positive = full_and_summary", 'code2text_positive = "full_and_summary"', []),
    ("constrained_text = same", 'constrained_text = "same"', ["language_named", "duplicate_texts"]),
    ("code_document = program", 'code_document = "program"', []),
    ("max_queries_per_type = 0 (no cap)", "max_queries_per_type = 0", []),
    ("max_queries_per_type = 10", "max_queries_per_type = 10", []),
    ("profile = coreb", 'profile = "coreb"', []),
]


def manifest_text(base, build_dir, releases_dir, qrels, waive):
    text = base.read_text(encoding="utf-8")
    text = re.sub(r'"\.\./', f'"{ROOT}/', text)
    text = re.sub(r"^output_dir = .*$", f'output_dir = "{build_dir}"', text, flags=re.M)
    text = re.sub(r"^releases_dir = .*$", f'releases_dir = "{releases_dir}"', text, flags=re.M)
    if qrels:
        if "[stages.qrels]" not in text:
            text += "\n[stages.qrels]\n"
        text = text.replace("[stages.qrels]\n", f"[stages.qrels]\n{qrels}\n", 1)
    if waive:
        text += "\n[gates]\nwaive = [" + ", ".join(f'"{w}"' for w in waive) + "]\n"
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--manifest", default=str(ROOT / "manifests/sample.toml"))
    ap.add_argument("--coreb", default=str(ROOT / "target/debug/coreb"))
    ap.add_argument("--dir", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="coreb-series-"))
    work.mkdir(parents=True, exist_ok=True)
    build_dir = work / "build"
    rows = []
    for i, (name, qrels, waive) in enumerate(VARIANTS):
        releases = work / f"releases-{i}"
        manifest = work / f"variant-{i}.toml"
        manifest.write_text(manifest_text(Path(args.manifest), build_dir, releases, qrels, waive), encoding="utf-8")
        out = subprocess.run([args.coreb, "build", str(manifest)], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"{name}: coreb build failed:\n{out.stderr[-3000:]}")
        found = sorted(releases.glob("*/MANIFEST.json"))
        m = json.loads(found[0].read_text(encoding="utf-8"))
        counts = m["counts"]["qrels"]["queries"]
        rows.append({"variant": name, "ndcg10": m["counts"]["bm25_ndcg10"],
                     "queries": {t: sum(n for k, n in counts.items() if k.startswith(t + "/")) for t in TASKS}})
        print(f"built {name}", file=sys.stderr)
    base = rows[0]["ndcg10"]
    print(f"| variant | " + " | ".join(f"{t} nDCG@10 (Δ)" for t in TASKS) + " | queries t2c / c2c / c2t |")
    print("|---|" + "---:|" * (len(TASKS) + 1))
    for r in rows:
        cells = [f"{r['ndcg10'][t]:.4f} ({r['ndcg10'][t] - base[t]:+.4f})" for t in TASKS]
        q = " / ".join(str(r["queries"][t]) for t in TASKS)
        print(f"| {r['variant']} | " + " | ".join(cells) + f" | {q} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
