#!/usr/bin/env python3
"""A month's rows in the published shape, beside the published v2603's.

Usage: bench/series/counts.py <releases dir> [--coreb target/debug/coreb] [--json FILE]

Exports the releases directory with `coreb export --layout hf-coreb` (the series' layout:
`c2t_match` pairs included, as the published code2text config has them) and prints, per
config of its latest release, the rows and, for qrels, the positives (relevance 2) and hard
negatives (relevance 1), beside the counts the published dataset's README gives for v2603.
Needs pyarrow (the test venv).
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
# hq-bench/coreb README, "Dataset Structure": v2603 rows (positives + hard negatives for qrels).
PUBLISHED = {
    "code_corpus": (1744, None, None),
    "text_corpus": (875, None, None),
    "text2code_queries": (1123, None, None),
    "text2code_qrels": (5950, 2814, 3136),
    "code2code_queries": (278, None, None),
    "code2code_qrels": (1457, 623, 834),
    "code2text_queries": (1200, None, None),
    "code2text_qrels": (4610, 820, 2650),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("releases")
    ap.add_argument("--coreb", default=str(ROOT / "target/debug/coreb"))
    ap.add_argument("--json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "export"
        subprocess.run([args.coreb, "export", "--layout", "hf-coreb", args.releases, str(out)], check=True, capture_output=True)
        rows = {}
        for config in PUBLISHED:
            split = sorted((out / "data" / config).glob("*.parquet"))[-1]
            t = pq.read_table(split)
            pos = neg = None
            if config.endswith("_qrels"):
                rel = t.column("relevance").to_pylist()
                pos, neg = rel.count(2), rel.count(1)
            subtasks = None
            if config.endswith("_queries"):
                names = t.column("subtask").to_pylist()
                subtasks = {n: names.count(n) for n in sorted(set(names))}
            rows[config] = {"split": split.stem, "rows": t.num_rows, "positives": pos, "hard_negatives": neg, "subtasks": subtasks}
    print("| config | this month | published v2603 |\n|---|---:|---:|")
    for config, (n, p, h) in PUBLISHED.items():
        r = rows[config]
        mine = f"{r['rows']:,}" + (f" ({r['positives']:,} pos + {r['hard_negatives']:,} hard neg)" if r["positives"] is not None else "")
        theirs = f"{n:,}" + (f" ({p:,} pos + {h:,} hard neg)" if p is not None else "")
        print(f"| {config} | {mine} | {theirs} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
