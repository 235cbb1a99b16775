#!/usr/bin/env python3
"""Corpus curation throughput: `coreb corpus` (exact + near dedup + language filter +
decontamination; alignment and negatives off) beside a datatrove-style Python exact dedup
(sha256 of the normalised text, a set of hashes) over the same generated corpus.

    cargo build --release -p coreb
    python3 bench/corpus/run.py --mb 1024 [--shards 16] [--work /tmp/coreb-bench-corpus] [--baseline OLD_COREB]

The corpus repeats CoSQA pairs (../shared/data/cosqa) with variations (a row number and
rotated words in the text, renamed identifiers in the code), so about one row in eight is an
exact copy of an earlier one. Peak memory is the max RSS of each process (os.wait4 of the child). Prints both side by side with ratios. Standard library only.
"""

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import time
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cosqa_pairs():
    data = os.path.join(ROOT, "..", "shared", "data", "cosqa")
    queries = {}
    with open(os.path.join(data, "queries.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            queries[r["_id"]] = r["text"]
    docs = {}
    with open(os.path.join(data, "corpus.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            docs[r["_id"]] = r["text"]
    pairs = []
    with open(os.path.join(data, "qrels", "test.tsv")) as f:
        next(f)
        for line in f:
            q, d, _ = line.rstrip("\n").split("\t")
            pairs.append((queries[q], docs[d]))
    return pairs


def generate(path, target_bytes, seed=7):
    rng = random.Random(seed)
    pairs = cosqa_pairs()
    written = 0
    rows = 0
    recent = []
    with open(path, "w") as out:
        while written < target_bytes:
            if recent and rng.random() < 0.125:
                line = rng.choice(recent)  # an exact copy of an earlier row
            else:
                text, code = pairs[rng.randrange(len(pairs))]
                words = text.split()
                k = rng.randrange(len(words)) if words else 0
                text = " ".join(words[k:] + words[:k]) + f" variant {rows}"
                code = code.replace("self", f"obj{rows % 97}").replace("return", "return " if rows % 2 else "return")
                line = json.dumps({"id": str(rows), "text": text, "code": code}) + "\n"
                recent.append(line)
                if len(recent) > 1000:
                    recent.pop(rng.randrange(len(recent)))
            out.write(line)
            written += len(line.encode())
            rows += 1
    return rows, written


PY_DEDUP = r"""
import hashlib, json, sys, unicodedata, resource, time
t = time.perf_counter()
seen = set(); kept = 0; rows = 0
with open(sys.argv[1]) as f:
    for line in f:
        r = json.loads(line)
        rows += 1
        norm = " ".join(unicodedata.normalize("NFC", r["text"] + "\n" + r["code"]).split())
        h = hashlib.sha256(norm.encode()).digest()
        if h not in seen:
            seen.add(h); kept += 1
print(json.dumps({"rows": rows, "kept": kept, "seconds": time.perf_counter() - t}))
"""


def run_child(cmd, work):
    """Run a command; its wall time, peak RSS (MiB) and CPU seconds from os.wait4."""
    out_path = os.path.join(work, "child.out")
    with open(out_path, "w") as out, open(os.path.join(work, "child.err"), "w") as err:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
    if status != 0:
        sys.exit(f"{cmd[0]} failed ({status}): see {work}/child.err")
    with open(out_path) as f:
        stdout = f.read()
    return stdout, wall, usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--work", default="/tmp/coreb-bench-corpus")
    ap.add_argument("--coreb", default=os.path.join(ROOT, "target", "release", "coreb"))
    ap.add_argument("--baseline", help="another coreb binary (e.g. an older build) to run on the same data")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    data = os.path.join(a.work, f"corpus_{a.mb}mb.jsonl")
    if not os.path.exists(data):
        t = time.perf_counter()
        rows, size = generate(data + ".tmp", a.mb * 1024 * 1024)
        os.rename(data + ".tmp", data)
        print(f"generated {rows} rows, {size / 2**20:.0f} MiB in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    size_mb = os.path.getsize(data) / 2**20

    py, py_wall, py_rss, py_cpu = run_child([sys.executable, "-c", PY_DEDUP, data], a.work)
    py_out = json.loads(py)

    def run_coreb(binary):
        out_dir = os.path.join(a.work, "out")
        subprocess.run(["rm", "-rf", out_dir], check=True)
        manifest = os.path.join(a.work, "bench.toml")
        with open(manifest, "w") as f:
            f.write(
                f'releases_dir = "{os.path.join(ROOT, "releases")}"\n[output]\ndir = "{out_dir}"\nshards = {a.shards}\n'
                f'[[source]]\nname = "bench"\nformat = "jsonl"\npath = "{data}"\nid_field = "id"\n'
                "[align]\nenabled = false\n[negatives]\nhard = 0\neasy = 0\n"
            )
        stdout, wall, rss, cpu = run_child([binary, "corpus", manifest, "--json"], a.work)
        return json.loads(stdout.strip().splitlines()[-1]), wall, rss, cpu

    load = os.getloadavg()[0]
    rs_out, rs_wall, rs_rss, rs_cpu = run_coreb(a.coreb)
    rs_exact = rs_out["exact_duplicate"] + rs_out["duplicate_id"]
    baseline = run_coreb(a.baseline) if a.baseline else None

    print(f"\ncorpus: {size_mb:.0f} MiB, {py_out['rows']} rows, {a.shards} shards, {os.cpu_count()} cores, "
          f"load average {load:.1f} at the start (cpu seconds are the figure to trust on a shared machine)\n")
    print(f"{'':34} {'coreb corpus':>16} {'python exact':>16} {'ratio':>8}")
    print(f"{'steps':34} {'exact+near+lang+decontam':>16}   {'exact sha256':>14}")
    print(f"{'wall seconds':34} {rs_wall:16.1f} {py_wall:16.1f} {py_wall / rs_wall:7.2f}x")
    print(f"{'throughput MB/s (wall)':34} {size_mb / rs_wall:16.1f} {size_mb / py_wall:16.1f} {py_wall / rs_wall:7.2f}x")
    print(f"{'cpu seconds':34} {rs_cpu:16.1f} {py_cpu:16.1f} {py_cpu / max(rs_cpu, 1e-9):7.2f}x")
    print(f"{'peak RSS MiB':34} {rs_rss:16.0f} {py_rss:16.0f} {rs_rss / max(py_rss, 1e-9):7.2f}x")
    print(f"{'rows kept':34} {rs_out['rows_out']:16} {py_out['kept']:16}")
    print(f"{'exact duplicates removed':34} {rs_exact:16} {py_out['rows'] - py_out['kept']:16}")
    print(f"{'near duplicates removed':34} {rs_out['near_duplicate']:16} {'-':>16}")
    print(f"{'language/url/html/short removed':34} {rs_out['language'] + rs_out['url'] + rs_out['html'] + rs_out['too_short']:16} {'-':>16}")

    if baseline:
        b_out, b_wall, b_rss, b_cpu = baseline
        print(f"\nbaseline {a.baseline}: {b_wall:.1f} s wall ({size_mb / b_wall:.1f} MB/s), {b_cpu:.1f} cpu s, "
              f"{b_rss:.0f} MiB peak; new/baseline: {b_wall / rs_wall:.2f}x faster, {b_cpu / max(rs_cpu, 1e-9):.2f}x less cpu, "
              f"{rs_rss / max(b_rss, 1e-9):.2f}x the memory; near duplicates {rs_out['near_duplicate']} vs {b_out['near_duplicate']}")


if __name__ == "__main__":
    main()
