#!/usr/bin/env python3
"""Corpus curation benchmark: `coreb corpus` at 1 and N output shards and at 1 and 2+ threads
(the kept rows must be identical in every configuration; the script fails if they are not),
beside datatrove's MinHash deduplication (its four stages, one worker) on the same data, with
the duplicate sets of both compared.

    cargo build --release -p coreb
    python3 bench/corpus/run.py [--mb 64] [--shards 16] [--threads 1,2] [--work /tmp/coreb-bench-corpus]
                                [--no-datatrove] [--tokenizers spacy,split] [--baseline OLD_COREB]
                                [--dedup-tasks T] [--no-normalise-run]

The corpus repeats CoSQA pairs (tests/fixtures/data/cosqa) with variations (a row number and
rotated words in the text, renamed identifiers such as `obj12` in the code), so about one row
in eight is an exact copy of an earlier one and most others are near copies.

coreb runs with exact + near dedup, the language filter and decontamination (alignment and
negatives off). Each process's CPU seconds and peak RSS come from os.wait4; MiB per CPU-second
is the figure to trust on a shared machine. With --dedup-tasks T the split near-duplicate
decision (issue #35) runs too, as a scheduler runs it: T shard processes, the exact step, T band
tasks, the clustering step and the merge, each process measured on its own; its kept rows must
equal the others and every output file must be the single process's, byte for byte. datatrove runs in bench/corpus/venv (made on first
use from bench/corpus/requirements.txt: datatrove, spaCy for its default English word
tokenizer, whose blank pipeline needs no download, and xxhash < 4) with 5-word shingles and 32
bands x 4 rows like coreb's defaults, once with its default tokenizer (spaCy) and once with a
plain whitespace split. The duplicate sets are compared as "rows that are not the first of
their group" (datatrove keeps the root of its union-find, not the first row, so its own
removed set is reported too) for coreb's two near-dedup normalisations: `none` and
`datatrove` (digits folded, punctuation removed).
"""

import argparse
import glob
import hashlib
import json
import os
import random
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VENV = os.path.join(HERE, "venv")


def cosqa_pairs():
    data = os.path.join(ROOT, "tests", "fixtures", "data", "cosqa")
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


TIME = "/usr/bin/time"


def run_child(cmd, work, env=None):
    """Run a command; its stdout, wall time, peak RSS (MiB) and CPU seconds.

    Through GNU time when there is one: a child that this (large) Python process starts
    directly inherits its peak RSS in ru_maxrss (vfork + exec carry the parent's high-water
    mark over), so the small steps of the chain would read as large as the bench itself;
    `time` forks the command from a small process and reports the command's own peak."""
    out_path = os.path.join(work, "child.out")
    usage_path = os.path.join(work, "child.usage")
    wrapped = [TIME, "-f", "%M %U %S", "-o", usage_path, *cmd] if os.path.exists(TIME) else cmd
    with open(out_path, "w") as out, open(os.path.join(work, "child.err"), "w") as err:
        t = time.perf_counter()
        proc = subprocess.Popen(wrapped, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
    if status != 0:
        with open(os.path.join(work, "child.err")) as f:
            tail = f.read()[-3000:]
        sys.exit(f"{cmd[0]} failed ({status}):\n{tail}")
    with open(out_path) as f:
        stdout = f.read()
    if wrapped is not cmd:
        with open(usage_path) as f:
            kib, user, system = f.read().split()[-3:]
        return stdout, wall, int(kib) / 1024.0, float(user) + float(system)
    return stdout, wall, usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime


def write_manifest(a, data, shards, normalise="none"):
    """A fresh output directory and the bench manifest writing there; returns both."""
    out_dir = os.path.join(a.work, "out")
    subprocess.run(["rm", "-rf", out_dir], check=True)
    manifest = os.path.join(a.work, "bench.toml")
    with open(manifest, "w") as f:
        f.write(
            f'releases_dir = "{os.path.join(ROOT, "releases")}"\n[output]\ndir = "{out_dir}"\nshards = {shards}\n'
            # No `id_field`: a pair's id is its line number, which the duplicate sets are
            # compared by (the generator's exact copies repeat the copied row's `id`).
            f'[[source]]\nname = "bench"\nformat = "jsonl"\npath = "{data}"\n'
            "[align]\nenabled = false\n[negatives]\nhard = 0\neasy = 0\n"
            + (f'[dedup]\nnormalise = "{normalise}"\n' if normalise != "none" else "")
        )
    return manifest, out_dir


def run_coreb(binary, a, data, shards, threads, normalise="none"):
    """One `coreb corpus` run; its stats, figures, kept-id digest and dedup-dropped rows."""
    manifest, out_dir = write_manifest(a, data, shards, normalise)
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    stdout, wall, rss, cpu = run_child([binary, "corpus", manifest, "--json"], a.work, env)
    stats = json.loads(stdout.strip().splitlines()[-1])
    return collect(out_dir, {"stats": stats, "wall": wall, "rss": rss, "cpu": cpu, "shards": shards, "threads": threads})


def tree_digest(out_dir):
    """sha256 over every output file (path and bytes, in path order): equal outputs, byte for byte."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(out_dir):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            h.update(os.path.relpath(path, out_dir).encode() + b"\0")
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
    return h.hexdigest()[:16]


def collect(out_dir, run):
    """`run` with the kept-id digest, the digest of every output file and the dedup-dropped
    rows of the output in `out_dir`."""
    kept = []
    for part in sorted(glob.glob(os.path.join(out_dir, "jsonl", "train", "*", "part.jsonl"))):
        with open(part) as f:
            kept.extend(json.loads(line)["id"] for line in f)
    dropped = set()
    with open(os.path.join(out_dir, "dropped.jsonl")) as f:
        for line in f:
            d = json.loads(line)
            if d["reason"] in ("duplicate_id", "exact_duplicate", "near_duplicate"):
                dropped.add(int(d["id"].split(":", 1)[1]))  # the line number
    digest = hashlib.sha256("\n".join(sorted(kept)).encode()).hexdigest()[:16]
    return dict(run, digest=digest, tree=tree_digest(out_dir), dedup_dropped=dropped)


def run_split(binary, a, data, tasks, threads):
    """The split decision as a scheduler runs it (issue #35), every process measured on its
    own: `tasks` shard processes, the exact step, `tasks` band tasks, the clustering step and
    the merge, one after another. Returns each step's processes' figures and the output's."""
    manifest, out_dir = write_manifest(a, data, 1)
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    steps = [("shard", [["--shard", f"{i}/{tasks}"] for i in range(tasks)]), ("exact", [["--dedup-step", "exact"]]),
             ("bands", [["--dedup-step", "bands", "--task", f"{i}/{tasks}"] for i in range(tasks)]), ("clusters", [["--dedup-step", "clusters"]])]
    figures = []
    for name, calls in steps:
        procs = [run_child([binary, "corpus", manifest, "--json", *args], a.work, env) for args in calls]
        figures.append({"step": name, "tasks": len(procs), "rss": max(p[2] for p in procs), "cpu": sum(p[3] for p in procs), "wall": sum(p[1] for p in procs)})
    stdout, wall, rss, cpu = run_child([binary, "merge", "corpus", manifest, "--json"], a.work, env)
    figures.append({"step": "merge", "tasks": 1, "rss": rss, "cpu": cpu, "wall": wall})
    stats = json.loads(stdout.strip().splitlines()[-1])
    return collect(out_dir, {"stats": stats, "figures": figures, "shards": 1, "threads": threads, "tasks": tasks})


DATATROVE = r"""
import json, os, struct, sys
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupSignature, MinhashDedupBuckets, MinhashDedupCluster, MinhashDedupFilter
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter
from datatrove.utils.word_tokenizers import WordTokenizer

data, work, tokenizer = sys.argv[1], sys.argv[2], sys.argv[3]

class Split(WordTokenizer):
    # A plain whitespace split of datatrove's simplified text.
    def word_tokenize(self, text): return text.split()
    def sent_tokenize(self, text): return [text]
    def span_tokenize(self, text): return [(0, len(text))]

def adapter(self, row, path, id_in_file):
    return {"text": row["text"] + "\n" + row["code"], "id": row["id"], "metadata": {}}

language = "en" if tokenizer == "spacy" else Split()
config = MinhashConfig(n_grams=5, num_buckets=32, hashes_per_bucket=4)
reader = lambda: JsonlReader(os.path.dirname(data), glob_pattern=os.path.basename(data), adapter=adapter)
stages = [
    [reader(), MinhashDedupSignature(output_folder=f"{work}/signatures", config=config, language=language)],
    [MinhashDedupBuckets(input_folder=f"{work}/signatures", output_folder=f"{work}/buckets", config=config)],
    [MinhashDedupCluster(input_folder=f"{work}/buckets", output_folder=f"{work}/remove_ids", config=config, save_cluster_id=True)],
    [reader(), MinhashDedupFilter(input_folder=f"{work}/remove_ids"), JsonlWriter(f"{work}/deduped")],
]
for i, pipeline in enumerate(stages):
    tasks = config.num_buckets if i == 1 else 1
    LocalPipelineExecutor(pipeline=pipeline, tasks=tasks, workers=1, logging_dir=f"{work}/logs/stage{i}").run()

def pairs(path, fmt):
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        b = f.read()
    size = struct.calcsize(fmt)
    return [struct.unpack(fmt, b[i:i + size]) for i in range(0, len(b), size)]

removed = [d for (d,) in pairs(f"{work}/remove_ids/000000.remove", "<I")]
clusters = pairs(f"{work}/remove_ids/000000.clusters", "<2I")
print(json.dumps({"removed": removed, "clusters": clusters}))
"""


def ensure_venv():
    python = os.path.join(VENV, "bin", "python")
    if not os.path.exists(python):
        print("making bench/corpus/venv (datatrove, spaCy, xxhash) ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "-r", os.path.join(HERE, "requirements.txt")], check=True)
    return python


def run_datatrove(python, a, data, tokenizer):
    """datatrove's four stages on `data`; a finished run on the same data is reused (its
    figures were measured when it ran) unless --rerun-datatrove: it takes minutes."""
    work = os.path.join(a.work, f"datatrove-{tokenizer}")
    result = os.path.join(work, "result.json")
    key = {"data": data, "size": os.path.getsize(data), "tokenizer": tokenizer, "script": hashlib.sha256(DATATROVE.encode()).hexdigest()}
    cached = None
    if os.path.exists(result) and not a.rerun_datatrove:
        with open(result) as f:
            cached = json.load(f)
        if cached.get("key") != key:
            cached = None
    if cached:
        print(f"  (reusing the datatrove run in {work}: --rerun-datatrove to redo it)", file=sys.stderr)
        out, wall, rss, cpu = cached["out"], cached["wall"], cached["rss"], cached["cpu"]
    else:
        subprocess.run(["rm", "-rf", work], check=True)
        os.makedirs(work)
        stdout, wall, rss, cpu = run_child([python, "-c", DATATROVE, data, work, tokenizer], a.work)
        out = json.loads(stdout.strip().splitlines()[-1])
        with open(result, "w") as f:
            json.dump({"key": key, "out": out, "wall": wall, "rss": rss, "cpu": cpu}, f)
    # Rows that are not the first of their cluster (whatever row datatrove kept).
    first = {}
    for doc, cluster in out["clusters"]:
        first[cluster] = min(first.get(cluster, doc), doc)
    not_first = {doc for doc, cluster in out["clusters"] if doc != first[cluster]}
    return {"wall": wall, "rss": rss, "cpu": cpu, "removed": set(out["removed"]), "not_first": not_first, "tokenizer": tokenizer, "reused": bool(cached)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=64)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--threads", default=f"1,{os.cpu_count()}", help="thread counts to run coreb at (comma-separated)")
    ap.add_argument("--work", default="/tmp/coreb-bench-corpus")
    ap.add_argument("--coreb", default=os.path.join(ROOT, "target", "release", "coreb"))
    ap.add_argument("--no-datatrove", action="store_true", help="skip datatrove (no venv needed)")
    ap.add_argument("--tokenizers", default="spacy,split", help="datatrove word tokenizers: spacy (its default), split")
    ap.add_argument("--rerun-datatrove", action="store_true", help="run datatrove again even if a finished run on the same data is in --work")
    ap.add_argument("--baseline", help="another coreb binary (e.g. an older build) to run at 1 and N shards on the same data")
    ap.add_argument("--no-normalise-run", action="store_true", help="skip the extra coreb run with normalise = datatrove")
    ap.add_argument("--dedup-tasks", type=int, help="also run the split decision as T shard processes, the exact step, "
                    "T band tasks, the clustering step and the merge, each process measured on its own")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    python = None if a.no_datatrove else ensure_venv()
    data = os.path.join(a.work, f"corpus_{a.mb}mb.jsonl")
    if not os.path.exists(data):
        t = time.perf_counter()
        rows, size = generate(data + ".tmp", a.mb * 1024 * 1024)
        os.rename(data + ".tmp", data)
        print(f"generated {rows} rows, {size / 2**20:.0f} MiB in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    size_mib = os.path.getsize(data) / 2**20
    load = os.getloadavg()

    threads = [int(t) for t in a.threads.split(",")]
    runs = []
    for t in threads:
        for shards in sorted({1, a.shards}):
            print(f"coreb: {shards} shards, {t} threads ...", file=sys.stderr)
            runs.append(run_coreb(a.coreb, a, data, shards, t))
    dt_norm = None
    if not a.no_normalise_run:
        print(f"coreb: normalise = datatrove, 1 shard, {threads[-1]} threads ...", file=sys.stderr)
        dt_norm = run_coreb(a.coreb, a, data, 1, threads[-1], "datatrove")
    baseline = []
    if a.baseline:
        for shards in sorted({1, a.shards}):
            print(f"baseline: {shards} shards ...", file=sys.stderr)
            baseline.append(run_coreb(a.baseline, a, data, shards, threads[-1]))
    split = None
    if a.dedup_tasks:
        print(f"coreb: split decision, {a.dedup_tasks} tasks, {threads[-1]} threads ...", file=sys.stderr)
        split = run_split(a.coreb, a, data, a.dedup_tasks, threads[-1])
    dts = []
    if python:
        for tok in a.tokenizers.split(","):
            print(f"datatrove MinHash ({tok} tokenizer), one worker ...", file=sys.stderr)
            dts.append(run_datatrove(python, a, data, tok))
    load_end = os.getloadavg()

    rows = runs[0]["stats"]["rows_in"]
    print(f"\ncorpus: {size_mib:.0f} MiB, {rows} rows; {os.cpu_count()} cores; load average {load[0]:.1f} at the start, "
          f"{load_end[0]:.1f} at the end (shared machine: CPU seconds are the figure to trust)\n")
    print(f"{'coreb corpus':24} {'threads':>7} {'shards':>6} {'wall s':>7} {'cpu s':>7} {'MiB/cpu-s':>9} {'MiB/s':>7} "
          f"{'cpu s/GiB':>9} {'RSS MiB':>8} {'kept':>8} {'exact':>8} {'near':>8}  kept ids")
    for r in runs + ([dict(dt_norm, label="normalise=datatrove")] if dt_norm else []) + [dict(b, label="baseline") for b in baseline]:
        s = r["stats"]
        print(f"{r.get('label', ''):24} {r['threads']:7} {r['shards']:6} {r['wall']:7.2f} {r['cpu']:7.2f} {size_mib / r['cpu']:9.1f} "
              f"{size_mib / r['wall']:7.1f} {r['cpu'] / size_mib * 1024:9.1f} {r['rss']:8.0f} {s['rows_out']:8} "
              f"{s['exact_duplicate'] + s['duplicate_id']:8} {s['near_duplicate']:8}  {r['digest']}")
    by = {(r["threads"], r["shards"]): r for r in runs}
    print()
    for t in threads:
        if (t, 1) in by and (t, a.shards) in by and a.shards != 1:
            r1, rn = by[(t, 1)], by[(t, a.shards)]
            print(f"{t} threads: cpu per GiB at {a.shards} shards / at 1 shard = {rn['cpu'] / r1['cpu']:.2f}")
    if len(threads) > 1:
        for shards in sorted({1, a.shards}):
            r1, rn = by[(threads[0], shards)], by[(threads[-1], shards)]
            print(f"{shards} shards: cpu per GiB at {threads[-1]} threads / at {threads[0]} = {rn['cpu'] / r1['cpu']:.2f}, "
                  f"wall speed-up {r1['wall'] / rn['wall']:.2f}x")
    for b in baseline:
        print(f"baseline at {b['shards']} shards keeps {b['stats']['rows_out']} rows (near {b['stats']['near_duplicate']})")

    if split:
        single = by.get((threads[-1], 1)) or runs[0]
        print(f"\nsplit decision, {split['tasks']} tasks ({split['threads']} threads each; the single process: {single['rss']:.0f} MiB peak, {single['cpu']:.2f} cpu s):")
        for f in split["figures"]:
            print(f"  {f['step']:9} {f['tasks']:3} processes: peak RSS of the largest {f['rss']:8.0f} MiB ({f['rss'] / single['rss']:.2f} of the single process), cpu s {f['cpu']:7.2f}")
        peak = max(f["rss"] for f in split["figures"])
        cpu = sum(f["cpu"] for f in split["figures"])
        print(f"  largest peak / single process = {peak / single['rss']:.2f}; cpu / single process = {cpu / single['cpu']:.2f} "
              f"({cpu / size_mib * 1024:.1f} against {single['cpu'] / size_mib * 1024:.1f} cpu s per GiB); kept {split['stats']['rows_out']} ({split['digest']})")
        if split["tree"] != single["tree"]:
            sys.exit(f"FAIL: the split decision's output files differ from the single process's ({split['tree']} vs {single['tree']})")
        print(f"  every output file is the single process's, byte for byte ({split['tree']})")
        runs.append(split)

    one_thread = by.get((1, 1)) or runs[0]
    for d in dts:
        print(f"\ndatatrove MinHash, {d['tokenizer']} tokenizer, one worker{' (reused run)' if d['reused'] else ''}: {d['wall']:.1f} s wall, {d['cpu']:.1f} cpu s, "
              f"{size_mib / d['cpu']:.2f} MiB/cpu-s, {d['rss']:.0f} MiB peak; removed {len(d['removed'])} rows "
              f"({len(d['not_first'])} not the first of their group); coreb at {one_thread['threads']} thread: "
              f"{d['cpu'] / one_thread['cpu']:.0f}x the MiB per cpu-second")
        for label, r in (("none", one_thread), ("datatrove", dt_norm)) if dt_norm else (("none", one_thread),):
            c, t = r["dedup_dropped"], d["not_first"]
            print(f"  vs coreb normalise={label:9}: coreb {len(c)}, datatrove {len(t)}, both {len(c & t)}, "
                  f"coreb only {len(c - t)}, datatrove only {len(t - c)}, agreement {len(c & t) / max(len(c | t), 1):.3f} (Jaccard of the sets)")

    digests = {(r["digest"], r["stats"]["rows_out"]) for r in runs}
    if len(digests) != 1:
        sys.exit(f"FAIL: the kept rows differ between configurations: {sorted(digests)}")
    print(f"\nOK: every configuration keeps the same {runs[0]['stats']['rows_out']} rows")


if __name__ == "__main__":
    main()
