#!/usr/bin/env python3
"""Benchmark `coreb leaderboard` and its page at a few years' scale.

Makes a synthetic results store: one real record (`coreb eval --record`, BM25 on the sample
release: every task, subtask, language and metric, ~420 rows) copied for MODELS models ×
RELEASES monthly releases with shifted values and cutoffs, plus the releases' MANIFEST.json
(the sample's, with version and window changed). Then times, side by side on that store:

- `coreb leaderboard --out` (read the store, polars analytics, write the site) and
  `coreb leaderboard --json --from … --to … --after-cutoff` (one more window), wall and peak RSS;
- the page in headless Chromium from file://: load until drawn, and one control change
  (the cutoff toggle and a window move, each a full recomputation and redraw).

Usage (the test venv has pyarrow and websocket-client; chromium from .ci/run):
  cargo build --release -p coreb
  .venv/bin/python bench/leaderboard/bench.py [--models 20] [--releases 24] [--coreb target/release/coreb]
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
from leaderboard_browser import Browser  # noqa: E402


def timed(cmd):
    """(wall seconds, peak RSS MiB, stdout) of one command, via /usr/bin/time."""
    t = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stderr[-3000:]}")
    rss_kib = int(p.stderr.strip().splitlines()[-1])
    return wall, rss_kib / 1024, p.stdout


def month(i):
    y, m = divmod(i, 12)
    return 2024 + y, m + 1


def make(dir_, coreb, models, releases):
    sample = os.path.join(ROOT, "releases", "sample", "v202503")
    seed_store = os.path.join(dir_, "seed")
    subprocess.run([coreb, "eval", sample, "--record", "--results", seed_store, "--resamples", "0"], check=True, capture_output=True)
    seed_file = next(os.path.join(d, f) for d, _, fs in os.walk(seed_store) for f in fs if f.endswith(".parquet"))
    seed = pq.read_table(seed_file)
    manifest = json.load(open(os.path.join(sample, "MANIFEST.json")))
    rel_dir = os.path.join(dir_, "releases")
    for r in range(releases):
        y, m = month(r)
        version = f"v{y}{m:02d}"
        os.makedirs(os.path.join(rel_dir, version), exist_ok=True)
        mf = dict(manifest, version=version, window={"start": f"{y}-{m:02d}-01", "end": f"{y}-{m:02d}-28"})
        with open(os.path.join(rel_dir, version, "MANIFEST.json"), "w") as f:
            json.dump(mf, f)
        for k in range(models):
            cutoff_y, cutoff_m = month(k % releases)
            factor = 0.5 + 0.5 * ((k * 7 + r * 3) % 11) / 10
            values = [min(1.0, v * factor) for v in seed.column("value").to_pylist()]
            rid = hashlib.sha256(f"{k}/{version}".encode()).hexdigest()
            n = seed.num_rows
            t = seed.set_column(seed.schema.get_field_index("value"), "value", pa.array(values, pa.float64()))
            for name, val in [("record_id", rid), ("model", f"model-{k:02d}"), ("retriever", f"run:model-{k:02d}"), ("release", version),
                              ("cutoff", f"{cutoff_y}-{cutoff_m:02d}-28"), ("window_start", f"{y}-{m:02d}-01"), ("window_end", f"{y}-{m:02d}-28")]:
                t = t.set_column(t.schema.get_field_index(name), name, pa.array([val] * n, pa.string()))
            out = os.path.join(rel_dir, "results", version)
            os.makedirs(out, exist_ok=True)
            pq.write_table(t, os.path.join(out, f"{rid}.parquet"))
    return rel_dir, seed.num_rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=20)
    ap.add_argument("--releases", type=int, default=24)
    ap.add_argument("--coreb", default=os.path.join(ROOT, "target", "release", "coreb"))
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rel_dir, rows_per_record = make(tmp, args.coreb, args.models, args.releases)
        records = args.models * args.releases
        print(f"store: {records} records x {rows_per_record} rows = {records * rows_per_record:,} rows; load {os.getloadavg()[0]:.1f}")
        site = os.path.join(tmp, "site")
        wall, rss, _ = timed([args.coreb, "leaderboard", "--releases-dir", rel_dir, "--out", site])
        print(f"coreb leaderboard --out:  {wall:6.2f} s wall, {rss:6.1f} MiB peak; data.js {os.path.getsize(os.path.join(site, 'data.js')) / 2**20:.1f} MiB")
        y, m = month(args.releases // 2)
        wall, rss, out = timed([args.coreb, "leaderboard", "--releases-dir", rel_dir, "--json", "--from", f"{y}-{m:02d}", "--after-cutoff"])
        rows = json.loads(out)["view"]["rows"]
        print(f"coreb leaderboard --json (half window, after cutoff): {wall:6.2f} s wall, {rss:6.1f} MiB peak; {len(rows)} rows")

        browser = Browser(args.chromium)
        try:
            browser.call("Page.enable")
            t = time.perf_counter()
            browser.call("Page.navigate", url="file://" + os.path.join(site, "index.html"))
            while browser.eval("document.body && document.body.dataset.ready") != "true":
                time.sleep(0.01)
            load = time.perf_counter() - t
            toggle = browser.eval("(() => { const t = performance.now(); document.getElementById('after-cutoff').click(); return performance.now() - t; })()")
            move = browser.eval("(() => { const e = document.getElementById('from'); const t = performance.now(); e.value = String(Number(e.max) >> 1); e.dispatchEvent(new Event('input')); return performance.now() - t; })()")
            shown = browser.eval("document.querySelectorAll('#board tbody tr').length")
        finally:
            browser.close()
        print(f"page (headless Chromium, file://): loaded and drawn in {load:.2f} s; cutoff toggle {toggle:.0f} ms, window move {move:.0f} ms; {shown} table rows")


if __name__ == "__main__":
    main()
