#!/usr/bin/env python3
"""A month built live against the simulated endpoint, stage by stage, with figures.

Usage: bench/month/run.py [--n 200] [--tests 30] [--max-elements 400000] [--latency-ms 20]
                          [--fault-rate 10] [--models m-alpha,m-beta] [--coreb BIN]
                          [--reuse python,ruby] [--no-reuse-alone] [--idle-slots 8] [--no-labels] [--batch java]
                          [--previous-default]
                          [--dir DIR] [--data JSONL] [--json FILE] [--python PY]
                          [--save-plain FILE.json.gz | --plain-from FILE.json.gz]

1. `generate.py` writes an LCB-shaped JSONL of N problems (encoded private tests);
2. `simulator.py` serves the stages on 127.0.0.1 (latency, faults);
3. a live manifest (`mode = "live"`) is written and `coreb <stage> <manifest> --json` runs each
   stage in pipeline order under `/usr/bin/time -v` (wall, CPU, peak RSS), then `coreb build`
   finishes the release (every stage skipped);
4. after `execute` (and its bare-process floor), `execute` runs again with `[stages.execute]
   reuse` (`--reuse`, default python,ruby: the faster starts of issue #34), and a third time
   with `idle_slots` as well (`--idle-slots`, default 8: tests that wait give their core to
   the next, issue #34; `--no-reuse-alone` skips the second run), and a fourth time with
   `mode = "labels"` as well (issue #61: judging stops at a solution's first failing test;
   with `--batch java`, `batch = ["java"]`: a solution's Java tests in one JVM;
   `--no-labels` skips it); with `--previous-default` the first run is the month default before
   issue #61 (every test, with `reuse` and `idle_slots`) and only the labels run follows it;
   each run's verdicts are compared with the plain run's solution by
   solution (the labels run's pass/fail, and the verdict of every test it ran), and the later
   stages and the rebuild use the last run's manifest; `month_wall_s` sums the stages' wall
   with each run as the month's `execute`;
5. the simulator's counters give requests and faults per stage, `verdicts.parquet` is checked
   against the planted outcome of every solution (month_lib.outcome): correct ones pass,
   wrong ones get wrong_answer, slow ones time_limit, crashing ones runtime_error, broken ones
   compile_error; `qrels`'s rule of answers that can differ (issue #58) must flag no problem
   (every planted wrong solution is plainly wrong), and its count is in the figures
   (`ambiguous_answers`).

Exit status 1 when any check fails: a planted fault left unanswered, an item lost or
duplicated, a verdict against the truth, a verdict of the reuse or idle-slots run other
than the plain run's, or a pass/fail of the labels run other than the plain run's. `--python` must have pyarrow (the test venv).
"""
import argparse
import gzip
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import month_lib as lib  # noqa: E402

STAGES = ["fetch", "ingest", "dedup", "filter", "rewrite", "distract", "abbreviate", "generate", "execute", "queries", "qrels", "release"]
EXPECTED = {"correct": {"passed"}, "wrong": {"wrong_answer"}, "slow": {"time_limit"}, "crash": {"runtime_error"}, "compile": {"compile_error"}}

MANIFEST = """version = "v{month_tag}"
output_dir = "{dir}/build"
releases_dir = "{dir}/releases"
response_store = "{dir}/store"
prompts_dir = "{root}/prompts"

[window]
start = "{month}-01"
end = "{month}-28"

[[sources]]
name = "month"
url = "{data}"

[stages.execute]
skip_private_after_public_failure = {gate}

[stages.execute.limits]
cpu_time_ms = {cpu_ms}
wall_time_ms = {wall_ms}

[gates]
bm25_ndcg10_min = 0.0
bm25_ndcg10_max = 1.0
min_hard_negative_share = 0.0

[llm]
mode = "live"
base_url = "{url}"
api_key_env = ""
model = "{first_model}"
concurrency = {concurrency}
timeout_secs = {timeout}

[llm.retry]
min_delay_ms = 200
max_delay_ms = 2000

[llm.stages.generate]
models = {models}
"""


def timed(cmd, env=None):
    t0 = time.monotonic()
    out = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    err = out.stderr
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", err).group(1)) / 1024
    cpu = float(re.search(r"User time \(seconds\): (\S+)", err).group(1)) + float(re.search(r"System time \(seconds\): (\S+)", err).group(1))
    return out, wall, cpu, rss


def kill_during(cmd, secs):
    """Run `cmd` in its own process group and SIGKILL the group after `secs` (before it ends)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        proc.wait(timeout=secs)
        raise SystemExit(f"--kill-execute-after {secs}: `execute` ended before it was killed; give fewer seconds")
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return secs


def tree_digest(root):
    """path -> sha256 of every file under `root`."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            path = os.path.join(d, f)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def stats(url):
    with urllib.request.urlopen(url.replace("/v1", "") + "/stats", timeout=10) as r:
        return json.load(r)


def rows_of(report: dict):
    """The rows a stage wrote, from its `--json` report."""
    return report.get("rows_out") if isinstance(report, dict) else None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--tests", type=int, default=30)
    p.add_argument("--max-elements", type=int, default=400_000)
    p.add_argument("--latency-ms", type=float, default=20)
    p.add_argument("--fault-rate", type=int, default=10)
    p.add_argument("--stall-secs", type=float, default=4)
    p.add_argument("--timeout", type=int, default=3, help="llm.timeout_secs of the manifest")
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--models", default="m-alpha,m-beta")
    p.add_argument("--cpu-ms", type=int, default=2000)
    p.add_argument("--wall-ms", type=int, default=4000)
    p.add_argument("--coreb", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "coreb"))
    p.add_argument("--python", default=os.environ.get("COREB_PYTHON", sys.executable))
    p.add_argument("--no-floor", action="store_true", help="skip the bare-process execute floor")
    p.add_argument("--skip-private-after-public-failure", action="store_true",
                   help="set [stages.execute] skip_private_after_public_failure (the floor does the same)")
    p.add_argument("--kill-execute-after", type=float, metavar="SECS",
                   help="start `execute`, kill -9 it (with its sandboxed children) after SECS, then run it again; at the end rebuild the "
                        "month from scratch in a second directory and fail unless both releases are byte-identical")
    p.add_argument("--reuse", default="python,ruby",
                   help="languages of [stages.execute] reuse for the second execute run, and the third's ('' for none: no reuse run)")
    p.add_argument("--no-reuse-alone", action="store_true",
                   help="skip the second run (reuse without idle_slots); the third still runs with --reuse's languages")
    p.add_argument("--idle-slots", type=int, default=8,
                   help="[stages.execute] idle_slots of a third execute run, with --reuse's languages (0: no third run)")
    p.add_argument("--no-labels", action="store_true",
                   help="skip the fourth run (mode = \"labels\", with --reuse's languages and --idle-slots)")
    p.add_argument("--batch", default="",
                   help="languages whose tests of a solution run in one process in the labels run (batch = [...], e.g. java; default none)")
    p.add_argument("--previous-default", action="store_true",
                   help="the first `execute` runs as months did before issue #61 (every test, --reuse's languages, --idle-slots) and is the "
                        "run the others are compared with; then only the labels run (the same switches and mode = \"labels\")")
    p.add_argument("--dir")
    p.add_argument("--data", help="an LCB-shaped JSONL written beforehand by generate.py with the same --n, --tests and --max-elements "
                                   "(and --month 2025-05), used instead of generating one; generate_wall_s is then 0")
    p.add_argument("--save-plain", metavar="FILE.json.gz",
                   help="write the plain `execute` run (its wall, CPU, and every solution's verdicts) and a digest of what it judged here")
    p.add_argument("--plain-from", metavar="FILE.json.gz",
                   help="take the plain run from a --save-plain file instead of running it (the floor and the variant runs still run); "
                        "fails unless every output of the stages before `execute` and the parameters are those of the recorded run")
    p.add_argument("--json", help="write the figures here")
    args = p.parse_args()
    if args.previous_default and (args.no_labels or args.plain_from):
        p.error("--previous-default runs the previous default and the labels run beside it: leave out --no-labels and --plain-from")
    if args.plain_from and not (args.idle_slots or (args.reuse and not args.no_reuse_alone) or not args.no_labels):
        p.error("--plain-from needs a variant run (--reuse or --idle-slots) to write the month's verdicts")

    work = args.dir or tempfile.mkdtemp(prefix="month-")
    os.makedirs(work, exist_ok=True)
    data = os.path.abspath(args.data) if args.data else os.path.join(work, "month.jsonl")
    month = "2025-05"
    t0 = time.monotonic()
    if not args.data:
        subprocess.run([sys.executable, os.path.join(HERE, "generate.py"), data, str(args.n), "--tests", str(args.tests), "--max-elements", str(args.max_elements), "--month", month], check=True)
    gen_wall = time.monotonic() - t0
    port_file = os.path.join(work, "port")
    if os.path.exists(port_file):
        os.remove(port_file)
    sim = subprocess.Popen([sys.executable, os.path.join(HERE, "simulator.py"), "--port-file", port_file, "--latency-ms", str(args.latency_ms),
                            "--fault-rate", str(args.fault_rate), "--stall-secs", str(args.stall_secs)])
    failures = []
    try:
        for _ in range(200):
            if os.path.exists(port_file):
                break
            time.sleep(0.05)
        url = f"http://127.0.0.1:{open(port_file).read().strip()}/v1"
        models = args.models.split(",")
        manifest = os.path.join(work, "month.toml")
        langs = [l.strip() for l in args.reuse.split(",") if l.strip()]
        switches = (f"reuse = {json.dumps(langs)}\n" if langs else "") + (f"idle_slots = {args.idle_slots}\n" if args.idle_slots else "")
        with open(manifest, "w") as f:
            f.write(MANIFEST.format(month_tag=month.replace("-", ""), dir=work, root=ROOT, month=month, data=data, url=url, first_model=models[0],
                                    models=json.dumps(models), concurrency=args.concurrency, timeout=args.timeout, cpu_ms=args.cpu_ms, wall_ms=args.wall_ms,
                                    gate=str(args.skip_private_after_public_failure).lower()))
        if args.previous_default:
            # The first run is the previous month default: every test, with the switches.
            with open(manifest) as f:
                text = f.read()
            with open(manifest, "w") as f:
                f.write(text.replace("[stages.execute]\n", f"[stages.execute]\n{switches}", 1))
        load0 = open("/proc/loadavg").read().split()[:3]
        figures = {"first_execute": "previous default: " + "; ".join(switches.strip().splitlines()) if args.previous_default else "plain",
                   "n": args.n, "tests_per_problem": args.tests, "skip_private_after_public_failure": args.skip_private_after_public_failure, "max_elements": args.max_elements, "models": models, "cores": os.cpu_count(),
                   "generate_wall_s": round(gen_wall, 1), "jsonl_mib": round(os.path.getsize(data) / 2**20, 1), "stages": []}
        print(f"# month N={args.n}, {args.tests} tests/problem, {os.cpu_count()} cores, load {' '.join(load0)}; input {figures['jsonl_mib']} MiB ({gen_wall:.1f} s to generate)")
        print(f"{'stage':<11} {'wall s':>8} {'cpu s':>8} {'peak RSS MiB':>12} {'requests':>8} {'faults':>6} {'rows':>7}")
        before = {}
        peak = 0.0
        for stage in STAGES:
            if stage == "execute" and args.kill_execute_after:
                figures["killed_execute_after_s"] = kill_during([args.coreb, stage, manifest], args.kill_execute_after)
            recorded = None
            if stage == "execute" and args.plain_from:
                try:
                    recorded = load_recorded_plain(args, work)
                except ValueError as e:
                    failures.append(str(e))
                    break
                wall, cpu, rss, report = recorded["wall_s"], recorded["cpu_s"], recorded["peak_rss_mib"], {"test_check": recorded["test_check"]}
            else:
                out, wall, cpu, rss = timed([args.coreb, stage, manifest, "--json"])
                if out.returncode != 0:
                    print(out.stdout[-4000:], out.stderr[-4000:], file=sys.stderr)
                    failures.append(f"stage {stage} failed (exit {out.returncode})")
                    break
                try:
                    report = json.loads(out.stdout)
                except ValueError:
                    report = {}
            peak = max(peak, rss)
            after = stats(url)
            names = [stage] + (["rewrite_tests", "reference", "adapt_reference"] if stage == "rewrite" else [])
            req = sum(after.get(s, {}).get("requests", 0) - before.get(s, {}).get("requests", 0) for s in names)
            faults = sum(sum(after.get(s, {}).get("faults", {}).values()) - sum(before.get(s, {}).get("faults", {}).values()) for s in names)
            before = after
            rows = rows_of(report)
            figures["stages"].append({"stage": stage, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "peak_rss_mib": round(rss, 1), "requests": req, "faults": faults, "rows": rows}
                                     | ({"recorded": args.plain_from} if recorded else {}))
            print(f"{stage:<11} {wall:8.2f} {cpu:8.2f} {rss:12.1f} {req:8} {faults:6} {rows if rows is not None else '-':>7}"
                  + (f"   recorded plain run ({args.plain_from}), not run here" if recorded else ""), flush=True)
            if stage == "execute":
                # The month's rewrites keep the task: every changed test passes its reference.
                check = report.get("test_check") or {}
                figures["test_check"] = check
                if not check.get("problems") or check.get("tests_rejected") or check.get("tests_unchecked"):
                    failures.append(f"execute: changed tests re-checked against their reference: {check}")
                # The plain run's verdicts, read once: recorded, saved, and what the variants are compared with.
                if recorded:
                    plain = recorded["verdicts"]
                elif args.save_plain or args.reuse or args.idle_slots or not args.no_labels:
                    plain = verdicts_by_solution(args, artifact(work, "execute", "verdicts.parquet"))
                if args.save_plain and not recorded:
                    save_plain(args, work, wall, cpu, rss, check, plain)
                if not recorded:
                    with open(artifact(work, "execute", "record.json")) as f:
                        judging = (json.load(f).get("local") or {}).get("judging")
                    figures["execute_judging"] = judging
                    if judging:
                        print(f"{'':<11} inside: {judging['compiles']} compiles {judging['compile_wall_ms'] / 1000:.2f} s, {judging['test_runs']} test runs "
                              f"{judging['test_wall_ms'] / 1000:.2f} s (of which waiting out time limits {judging['time_limit_wall_ms'] / 1000:.2f} s)", flush=True)
            if stage == "execute" and not args.no_floor:
                # The floor, in the same run: the same solutions and tests as bare processes.
                fl = subprocess.run([args.python, os.path.join(HERE, "floor.py"), os.path.join(work, "build"), "--wall-ms", str(args.wall_ms), "--jobs", str(os.cpu_count()),
                                     "--coreb", args.coreb, "--manifest", manifest] + (["--gate"] if args.skip_private_after_public_failure else [])
                                    + (["--verdicts", args.plain_from] if recorded else []),
                                    capture_output=True, text=True)
                if fl.returncode != 0:
                    failures.append("floor.py failed: " + fl.stderr[-2000:])
                else:
                    floor = json.loads(fl.stdout.strip().splitlines()[-1])
                    figures["execute_floor"] = floor
                    figures["execute_over_floor"] = round(wall / floor["wall_s"], 3)
                    print(f"{'(floor)':<11} {floor['wall_s']:8.2f} {floor['cpu_s']:8.2f} {'':>12} {'':>8} {'':>6} {floor['solutions']:>7}"
                          f"   bare processes; execute/floor wall = {wall / floor['wall_s']:.2f}, pass/fail agree on {floor['agree_with_judge']}/{floor['solutions']}", flush=True)
                    for lang, c in (floor.get("per_language") or {}).items():
                        print(f"{'':<11} {lang:<7} bare processes, summed wall s: compile {c['compile_wall_s']:8.2f}, tests {c['test_wall_s']:8.2f}", flush=True)
            batch = [b.strip() for b in args.batch.split(",") if b.strip()]
            labels = 'mode = "labels"\n' + (f"batch = {json.dumps(batch)}\n" if batch else "")
            if stage == "execute" and args.previous_default:
                manifest = run_variant(args, work, manifest, wall, plain, "labels", labels, figures, failures)
            elif stage == "execute" and (args.reuse or args.idle_slots or not args.no_labels):
                base = manifest
                if langs and not args.no_reuse_alone:
                    manifest = run_variant(args, work, base, wall, plain, "reuse", f"reuse = {json.dumps(langs)}\n", figures, failures)
                if args.idle_slots:
                    manifest = run_variant(args, work, base, wall, plain, "reuse_idle", switches, figures, failures)
                if not args.no_labels:
                    manifest = run_variant(args, work, base, wall, plain, "labels", labels + switches, figures, failures)
        figures["peak_rss_mib"] = round(peak, 1)
        # The month's wall, stage by stage, with each `execute` run as its `execute`.
        others = sum(st["wall_s"] for st in figures["stages"] if st["stage"] != "execute")
        runs = {"plain": next((st["wall_s"] for st in figures["stages"] if st["stage"] == "execute"), None)}
        runs |= {label: figures[f"execute_{label}"]["wall_s"] for label in ("reuse", "reuse_idle", "labels") if f"execute_{label}" in figures}
        figures["month_wall_s"] = {label: round(others + w, 2) for label, w in runs.items() if w is not None}
        if figures["month_wall_s"]:
            print("month wall s (every stage, with each execute run): " + ", ".join(f"{k} {v:.2f}" for k, v in figures["month_wall_s"].items()), flush=True)
        final = stats(url)
        figures["endpoint"] = final
        for s, c in final.items():
            dup = c["answered"] - c["distinct_answered"]
            if dup:
                failures.append(f"{s}: {dup} requests answered twice (an item asked again)")
        if not failures:
            out, wall, cpu, rss = timed([args.coreb, "build", manifest])
            if out.returncode != 0:
                failures.append("final coreb build failed: " + out.stderr[-2000:])
            if stats(url) != final:
                failures.append("the final `coreb build` sent requests")
            figures["rebuild_wall_s"] = round(wall, 2)
            if args.kill_execute_after:
                # The same month from scratch (no kill), every answer from the store: the release
                # must be the killed-and-resumed one, byte for byte.
                fresh = os.path.join(work, "fresh")
                out, *_ = timed([args.coreb, "build", manifest, "--output-dir", os.path.join(fresh, "build"), "--publish-dir", os.path.join(fresh, "release")])
                if out.returncode != 0:
                    failures.append("the from-scratch build failed: " + out.stderr[-2000:])
                else:
                    a, b = tree_digest(os.path.join(work, "releases", "v" + month.replace("-", ""))), tree_digest(os.path.join(fresh, "release"))
                    figures["release_after_kill_identical"] = a == b
                    if a != b:
                        failures.append(f"the release after kill -9 during execute differs from a build without it: {sorted(set(a.items()) ^ set(b.items()))[:6]}")
            verdicts = check_verdicts(args, work, models)
            figures["verdicts"] = verdicts
            failures += verdicts.pop("failures")
            figures["ambiguous_answers"] = ambiguous = check_ambiguity(work)
            print(f"ambiguous answers (qrels): {len(ambiguous['flagged'])} of {ambiguous['problems']} problems flagged", flush=True)
            if ambiguous["flagged"]:
                failures.append(f"qrels flagged answers that can differ where every planted wrong solution is plainly wrong: {ambiguous['flagged']}")
        figures["load_end"] = open("/proc/loadavg").read().split()[:3]
        figures["failures"] = failures
        print(json.dumps({k: v for k, v in figures.items() if k not in ("stages",)}, indent=1))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(figures, f, indent=1)
    finally:
        sim.terminate()
        sim.wait()
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


VERDICTS_BY_SOLUTION = r"""
import json, sys
import pyarrow.parquet as pq
out = {}
for r in pq.read_table(sys.argv[1]).to_pylist():
    tests = r.get("tests") or []
    out[r["solution_id"]] = {"language": r["language"], "passed": r["passed"], "verdicts": [[x["index"], x["verdict"]] for x in tests],
                             "wall_ms": sum(x["wall_ms"] for x in tests), "cpu_ms": sum(x["cpu_ms"] for x in tests),
                             "stopped_by": r.get("stopped_by")}
print(json.dumps(out))
"""


def verdicts_by_solution(args, path):
    """solution id -> language, passed, [index, verdict] per test, summed test wall and CPU ms."""
    return json.loads(subprocess.run([args.python, "-c", VERDICTS_BY_SOLUTION, path], check=True, capture_output=True, text=True).stdout)


def check_ambiguity(work):
    """How often `qrels`'s rule of answers that can differ (issue #58) fired: the problems it
    saw and those it left out. Every planted wrong solution is plainly wrong (off by one or not
    reversed on every test, public ones included), so any problem flagged is a false alarm."""
    path = artifact(work, "qrels", "record.json")
    if not os.path.exists(path):
        return {"problems": 0, "flagged": [], "missing": "no qrels record"}
    with open(path) as f:
        summary = json.load(f)["summary"]
    flagged = [a["problem_id"] for a in summary.get("ambiguous_answers", [])]
    return {"problems": summary["rows_in"], "flagged": flagged}


def artifact(work, stage, name):
    """A file of a stage's artifacts in the month's build directory."""
    return os.path.join(work, "build", "artifacts", stage, name)


def recorded_params(args):
    """What a recorded plain run must share with this one besides its inputs."""
    return {"n": args.n, "tests": args.tests, "max_elements": args.max_elements, "models": args.models, "cpu_ms": args.cpu_ms, "wall_ms": args.wall_ms,
            "gate": args.skip_private_after_public_failure}


def upstream_digest(work):
    """stage/file -> sha256 of every output of the stages before `execute`, from their
    record.json: what `execute` judges (solutions, tests, references)."""
    out = {}
    for s in STAGES[:STAGES.index("execute")]:
        rec = artifact(work, s, "record.json")
        if os.path.exists(rec):
            with open(rec) as f:
                for o in json.load(f).get("outputs", {}).values():
                    out[f"{s}/{o['file']}"] = o["sha256"]
    return out


def save_plain(args, work, wall, cpu, rss, check, verdicts):
    """--save-plain: the plain run's figures and `verdicts` (verdicts_by_solution), and what
    it judged, gzipped JSON (written to a temporary name and renamed)."""
    body = {"params": recorded_params(args), "upstream": upstream_digest(work), "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "peak_rss_mib": round(rss, 1), "test_check": check, "verdicts": verdicts,
            "tool_fingerprint": tool_fingerprint(work)}
    tmp = args.save_plain + ".tmp"
    with gzip.open(tmp, "wt") as f:
        json.dump(body, f, sort_keys=True, separators=(",", ":"))
    os.replace(tmp, args.save_plain)


def tool_fingerprint(work):
    """The source fingerprint of the coreb that built this month (from `generate`'s record)."""
    with open(artifact(work, "generate", "record.json")) as f:
        return json.load(f).get("tool_fingerprint")


def load_recorded_plain(args, work):
    """--plain-from: the recorded plain run; ValueError naming why when it does not apply to
    this month."""
    with gzip.open(args.plain_from, "rt") as f:
        rec = json.load(f)
    params = recorded_params(args)
    if rec["params"] != params:
        raise ValueError(f"--plain-from {args.plain_from}: recorded with {rec['params']}, this run has {params}")
    tool = tool_fingerprint(work)
    if rec.get("tool_fingerprint") != tool:
        raise ValueError(f"--plain-from {args.plain_from}: recorded by coreb {rec.get('tool_fingerprint')}, this run's is {tool} (another judge may judge otherwise)")
    now = upstream_digest(work)
    differ = sorted(k for k in set(now) | set(rec["upstream"]) if now.get(k) != rec["upstream"].get(k))
    if differ:
        raise ValueError(f"--plain-from {args.plain_from}: the stages before execute wrote other outputs than the recorded run's: {differ[:6]}")
    return rec


def run_variant(args, work, manifest, plain_wall, plain, label, settings, figures, failures):
    """`execute` again with `settings` added to `[stages.execute]` (issue #34: `reuse`,
    `idle_slots`): its wall and CPU beside the plain run's and the floor's, per language the
    summed test times of both, and every solution's verdicts compared with the plain run's
    (`plain`). Returns the manifest of this run (the rest of the month uses the last one)."""
    verdicts_path = artifact(work, "execute", "verdicts.parquet")
    variant = os.path.join(work, f"month-{label}.toml")
    with open(manifest) as f:
        text = f.read()
    with open(variant, "w") as f:
        f.write(text.replace("[stages.execute]\n", f"[stages.execute]\n{settings}", 1))
    out, wall, cpu, rss = timed([args.coreb, "execute", variant, "--json"])
    if out.returncode != 0:
        failures.append(f"execute ({label}) failed (exit {out.returncode}): {out.stderr[-2000:]}")
        return manifest
    try:
        report = json.loads(out.stdout)
    except ValueError:
        report = {}
    fast = (report.get("stats") or {}).get("fast_starts", 0)
    compiled = (report.get("stats") or {}).get("fast_compiles", 0)
    record = json.load(open(artifact(work, "execute", "record.json")))
    gave_way = (record.get("local") or {}).get("tests_gave_way", 0)
    got = verdicts_by_solution(args, verdicts_path)
    if "mode = \"labels\"" in settings:
        # Labels: the same pass/fail, and every test that ran has the plain run's verdict.
        def same(a, b):
            ran = {i: v for i, v in b["verdicts"] if v != "not_run"}
            return a["passed"] == b["passed"] and all(dict(a["verdicts"]).get(i) == v for i, v in ran.items())
    else:
        def same(a, b):
            return a["verdicts"] == b["verdicts"] and a["passed"] == b["passed"]
    differ = sorted(k for k in plain if k not in got or not same(plain[k], got[k]))
    differ += sorted(k for k in got if k not in plain)
    stopped = {}
    for r in got.values():
        if r.get("stopped_by"):
            stopped[r["stopped_by"]] = stopped.get(r["stopped_by"], 0) + 1
    per = {}
    for mode, rows in (("plain", plain), (label, got)):
        for r in rows.values():
            c = per.setdefault(r["language"], {"solutions": 0})
            c["solutions"] += mode == "plain"
            c[f"{mode}_test_wall_s"] = round(c.get(f"{mode}_test_wall_s", 0) + r["wall_ms"] / 1000, 2)
            c[f"{mode}_test_cpu_s"] = round(c.get(f"{mode}_test_cpu_s", 0) + r["cpu_ms"] / 1000, 2)
    floor = figures.get("execute_floor", {}).get("wall_s")
    figures[f"execute_{label}"] = {"settings": settings.strip().splitlines(), "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "peak_rss_mib": round(rss, 1),
                                   "plain_wall_s": round(plain_wall, 2), "fast_starts": fast, "fast_compiles": compiled, "tests_gave_way": gave_way, "solutions": len(plain),
                                   "verdicts_differ": len(differ), "per_language": per, "over_floor": round(wall / floor, 3) if floor else None,
                                   "judging": record.get("local", {}).get("judging"), "stopped_by": stopped}
    ratio = f", execute({label})/floor wall = {wall / floor:.2f}" if floor else ""
    print(f"{'(' + label + ')':<11} {wall:8.2f} {cpu:8.2f} {rss:12.1f} {'':>8} {'':>6} {len(got):>7}"
          f"   {'; '.join(settings.strip().splitlines())}: {fast} solutions started faster, {compiled} compiled faster, {gave_way} tests gave way; plain/{label} wall = {plain_wall / wall:.2f}{ratio};"
          f" verdicts equal on {len(plain) - len(differ)}/{len(plain)}", flush=True)
    judging = record.get("local", {}).get("judging") or {}
    if judging:
        print(f"{'':<11} inside: {judging['compiles']} compiles {judging['compile_wall_ms'] / 1000:.2f} s, {judging['test_runs']} test runs {judging['test_wall_ms'] / 1000:.2f} s"
              f" (of which waiting out time limits {judging['time_limit_wall_ms'] / 1000:.2f} s), {gave_way} gave way; stopped by {stopped}", flush=True)
        if judging.get("batches"):
            print(f"{'':<11} batches: {judging['batches']} runs {judging.get('batch_wall_ms', 0) / 1000:.2f} s, {judging.get('batched_tests', 0)} tests kept from them", flush=True)
    for lang, c in sorted(per.items()):
        print(f"{'':<11} {lang:<7} summed test wall s: plain {c.get('plain_test_wall_s', 0):8.2f}, {label} {c.get(f'{label}_test_wall_s', 0):8.2f};"
              f" test CPU s: plain {c.get('plain_test_cpu_s', 0):8.2f}, {label} {c.get(f'{label}_test_cpu_s', 0):8.2f}", flush=True)
    for k in differ[:10]:
        failures.append(f"execute ({label}): {k}: verdicts {got.get(k, {}).get('verdicts')} against the plain run's {plain.get(k, {}).get('verdicts')}")
    return variant


def check_verdicts(args, work, models):
    """Every solution's verdicts against its planted outcome."""
    script = r"""
import json, sys
import pyarrow.parquet as pq
t = pq.read_table(sys.argv[1]).to_pylist()
out = []
for r in t:
    tests = r.get("tests") or []
    out.append({"problem_id": r["problem_id"], "model": r["model"], "language": r["language"], "passed": r["passed"],
                "verdicts": sorted({x["verdict"] for x in tests})})
print(json.dumps(out))
"""
    path = artifact(work, "execute", "verdicts.parquet")
    rows = json.loads(subprocess.run([args.python, "-c", script, path], check=True, capture_output=True, text=True).stdout)
    by = {}
    failures = []
    for r in rows:
        planted = lib.outcome(r["problem_id"], r["model"], r["language"])
        got = set(r["verdicts"])
        ok = (got == {"passed"}) if planted == "correct" else (bool(got & EXPECTED[planted]) and not r["passed"])
        key = f"{planted}"
        c = by.setdefault(key, {"solutions": 0, "as_planted": 0})
        c["solutions"] += 1
        c["as_planted"] += ok
        if not ok and len(failures) < 20:
            failures.append(f"{r['problem_id']} {r['model']} {r['language']}: planted {planted}, verdicts {sorted(got)}")
    expected = args.n * len(models) * len(lib.LANGUAGES)
    if len(rows) != expected:
        failures.append(f"{len(rows)} judged solutions, expected {expected}")
    return {"by_outcome": by, "solutions": len(rows), "failures": failures}


if __name__ == "__main__":
    sys.exit(main())
