#!/usr/bin/env python3
"""Ingest benchmark: coreb ingest vs a plain Python json + pickle decode, side by side.

Usage: bench/ingest/bench.py [SIZE_MB ...]   (default: 256 1024)

For each size it builds a file by repeating the shared LiveCodeBench rows, runs
`coreb ingest` (release build; decodes, types and writes Parquet) and `py_decode.py`
(decodes only, writes nothing) on it, and prints throughput (MiB/s) and peak RSS of each.
Peak memory is read from /usr/bin/time -v. Run from the project root after
`cargo build --release -p coreb`.
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(ROOT, "..", "shared", "data", "lcb", "lcb_v6_examples.jsonl")
COREB = os.path.join(ROOT, "target", "release", "coreb")
HERE = os.path.dirname(os.path.abspath(__file__))


def timed(cmd):
    out = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{cmd[0]} failed:\n{out.stdout}\n{out.stderr}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", out.stderr).group(1)
    parts = [float(p) for p in wall.split(":")]
    seconds = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
    rss_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr).group(1))
    user = float(re.search(r"User time \(seconds\): (\S+)", out.stderr).group(1))
    system = float(re.search(r"System time \(seconds\): (\S+)", out.stderr).group(1))
    return seconds, rss_kib / 1024, user + system, out.stdout


def main() -> None:
    sizes = [int(s) for s in sys.argv[1:]] or [256, 1024]
    if not os.path.exists(COREB):
        sys.exit("build first: cargo build --release -p coreb")
    print(f"{'size MiB':>8} {'tool':<22} {'wall s':>7} {'MiB/s':>7} {'cpu s':>7} {'peak RSS MiB':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            data = os.path.join(tmp, f"lcb_{size}.jsonl")
            subprocess.run([sys.executable, os.path.join(HERE, "make_big.py"), SHARED, data, str(size)], check=True)
            mib = os.path.getsize(data) / 2**20
            manifest = os.path.join(tmp, f"m{size}.toml")
            with open(manifest, "w") as f:
                f.write(f'version = "v202504"\noutput_dir = "build{size}"\n[[sources]]\nname = "big"\nurl = "{data}"\n')
            results = {}
            for name, cmd in [
                ("coreb ingest", [COREB, "ingest", manifest, "--json"]),
                ("python json+pickle", [sys.executable, os.path.join(HERE, "py_decode.py"), data]),
            ]:
                wall, rss, cpu, _ = timed(cmd)
                results[name] = (wall, rss)
                print(f"{mib:8.0f} {name:<22} {wall:7.2f} {mib / wall:7.1f} {cpu:7.2f} {rss:12.1f}", flush=True)
            (cw, cr), (pw, pr) = results["coreb ingest"], results["python json+pickle"]
            print(f"{mib:8.0f} {'ratio coreb/python':<22} speed x{pw / cw:.2f}, memory x{cr / pr:.2f}")
            os.remove(data)


if __name__ == "__main__":
    main()
