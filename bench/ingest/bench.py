#!/usr/bin/env python3
"""Ingest benchmark: coreb ingest vs a plain Python json + base64 + zlib + pickle + json
decode, side by side, on real-shaped rows.

Usage: bench/ingest/bench.py [SIZE_MB ...]   (default: 256 1024 2048)

The rows come from `bench/month/generate.py` (40 problems, 30 private tests each from one
element to 400,000, encoded as LiveCodeBench encodes them: base64 → zlib → pickle of the JSON
string; a few MB decoded per row), repeated with fresh question ids up to each size. For each
size it runs `coreb ingest` (release build; decodes, types and writes Parquet) on every core
and again held to one core (`taskset -c 0`), and `py_decode.py` (decodes only, writes nothing;
one core whatever it is given), and prints throughput (MiB/s), CPU and peak RSS of each (read
from /usr/bin/time -v). The one-core row tells CPU efficiency apart from parallelism. Run from
the project root after `cargo build --release -p coreb` (`$COREB` or
`$CARGO_TARGET_DIR/release/coreb` otherwise).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COREB = os.environ.get("COREB") or os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "coreb")
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
    sizes = [int(s) for s in sys.argv[1:]] or [256, 1024, 2048]
    if not os.path.exists(COREB):
        sys.exit("build first: cargo build --release -p coreb")
    print(f"{'size MiB':>8} {'tool':<22} {'wall s':>7} {'MiB/s':>7} {'cpu s':>7} {'peak RSS MiB':>12}")
    print(f"# {os.cpu_count()} cores, load {' '.join(open('/proc/loadavg').read().split()[:3])}")
    with tempfile.TemporaryDirectory() as tmp:
        rows = os.path.join(tmp, "month.jsonl")
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "month", "generate.py"), rows, "40"], check=True)
        for size in sizes:
            data = os.path.join(tmp, f"lcb_{size}.jsonl")
            subprocess.run([sys.executable, os.path.join(HERE, "make_big.py"), rows, data, str(size)], check=True)
            mib = os.path.getsize(data) / 2**20
            manifest = os.path.join(tmp, f"m{size}.toml")
            with open(manifest, "w") as f:
                f.write(f'version = "v202504"\noutput_dir = "build{size}"\n[[sources]]\nname = "big"\nurl = "{data}"\n')
            results = {}
            for name, cmd in [
                ("coreb ingest", [COREB, "ingest", manifest, "--json"]),
                ("coreb ingest, 1 core", ["taskset", "-c", "0", COREB, "ingest", manifest, "--json"]),
                ("python json+pickle", [sys.executable, os.path.join(HERE, "py_decode.py"), data]),
            ]:
                # A fresh output directory: a second run would find the first's table.
                shutil.rmtree(os.path.join(tmp, f"build{size}"), ignore_errors=True)
                # Every tool starts with nothing left to write back: neither the input just
                # generated nor the last run's table (writeback would take CPU and disk from
                # the run being timed).
                os.sync()
                wall, rss, cpu, out = timed(cmd)
                if name.startswith("coreb ingest"):
                    report = json.loads(out)
                    out = f"rows={report.get('rows_out')}"
                results[name] = (wall, rss)
                print(f"{mib:8.0f} {name:<22} {wall:7.2f} {mib / wall:7.1f} {cpu:7.2f} {rss:12.1f}  {out.strip().splitlines()[-1] if out.strip() else ''}", flush=True)
            (cw, cr), (c1, _), (pw, pr) = results["coreb ingest"], results["coreb ingest, 1 core"], results["python json+pickle"]
            print(f"{mib:8.0f} {'ratio coreb/python':<22} speed x{pw / cw:.2f} (1 core: x{pw / c1:.2f}), memory x{cr / pr:.2f}; load {' '.join(open('/proc/loadavg').read().split()[:3])}")
            os.remove(data)


if __name__ == "__main__":
    main()
