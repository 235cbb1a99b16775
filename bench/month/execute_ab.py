#!/usr/bin/env python3
"""`execute` beside its floor, rounds interleaved: the judge's modes and the bare-process floor
run one after another, R rounds, each round in another order, so that a machine whose load
drifts (a build beside it) weighs on every mode alike.

Usage: execute_ab.py WORK --coreb BIN [--baseline BIN] [--modes plain,reuse_idle] [--rounds 2]
                     [--variant LABEL=MANIFEST ...] [--no-floor] [--python PY] [--json FILE]

WORK is the directory of a finished `bench/month/run.py --dir WORK` run (its `month.toml`,
and the variant manifests it wrote: `month-reuse.toml`, `month-reuse_idle.toml`; only the
ones present are run). `execute` is re-run with each (its upstream stages come from the
store and the build directory, so nothing is asked of an endpoint); the floor is `floor.py`
on the same build, with the gate when the manifest sets it. Prints every run's wall and CPU,
then per mode the median wall and its ratio to the median floor, and per round the ratio to
that round's floor. Fails when a mode's pass/fail differs from the plain run's (without a
plain mode, from the first run's).

With `--baseline BIN` every mode also runs with that other build of coreb (labelled
`MODE@baseline`) in the same rounds: a change to the judge measured beside the judge before it.
`--variant LABEL=MANIFEST` adds a mode of another manifest of the same build (for example the
labels run's `month-labels.toml` beside a copy with one more switch); `--modes` picks the
modes (default: every one present); `floor` runs unless `--no-floor`.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run import artifact, timed, verdicts_by_solution  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("work")
    p.add_argument("--coreb", required=True)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--python", default=os.environ.get("COREB_PYTHON", sys.executable))
    p.add_argument("--wall-ms", type=int, default=4000)
    p.add_argument("--baseline", help="another coreb binary: every mode runs with it too, as MODE@baseline")
    p.add_argument("--modes", help="comma-separated modes to run (plain, reuse, reuse_idle; default: all present)")
    p.add_argument("--variant", action="append", default=[], metavar="LABEL=MANIFEST",
                   help="another manifest of the same build, run as mode LABEL")
    p.add_argument("--no-floor", action="store_true", help="skip the bare-process floor")
    p.add_argument("--json")
    args = p.parse_args()
    base = os.path.join(args.work, "month.toml")
    modes = {"plain": (base, args.coreb)}
    for label in ("reuse", "reuse_idle"):
        path = os.path.join(args.work, f"month-{label}.toml")
        if os.path.exists(path):
            modes[label] = (path, args.coreb)
    for variant in args.variant:
        label, _, path = variant.partition("=")
        if not label or not os.path.exists(path):
            p.error(f"--variant {variant!r}: LABEL=MANIFEST, with a manifest that exists")
        modes[label] = (path, args.coreb)
    if args.modes:
        wanted = [m.strip() for m in args.modes.split(",") if m.strip()]
        unknown = [m for m in wanted if m not in modes]
        if unknown:
            p.error(f"--modes: {unknown} not among the modes of {args.work}: {sorted(modes)}")
        modes = {m: modes[m] for m in wanted}
    if args.baseline:
        modes.update({f"{m}@baseline": (path, args.baseline) for m, (path, _) in list(modes.items())})
    gate = "skip_private_after_public_failure = true" in open(base).read()
    verdicts_path = artifact(args.work, "execute", "verdicts.parquet")
    order = ([] if args.no_floor else ["floor"]) + list(modes)
    runs = {m: [] for m in ["floor", *order]}
    failures = []
    verdicts = {}
    print(f"# execute A/B in {args.work}: {args.rounds} rounds of {order}; load {open('/proc/loadavg').read().split()[:3]}", flush=True)
    last = None
    for r in range(args.rounds):
        # Each round starts one further along, so no mode always follows the same one; never
        # with the mode just run (the same manifest again would find `execute` done).
        seq = order[r % len(order):] + order[:r % len(order)]
        if seq[0] == last and len(seq) > 1:
            seq = seq[1:] + seq[:1]
        last = seq[-1]
        for mode in seq:
            if mode == "floor":
                cmd = [args.python, os.path.join(HERE, "floor.py"), os.path.join(args.work, "build"), "--wall-ms", str(args.wall_ms), "--jobs", str(os.cpu_count()),
                       "--coreb", args.coreb, "--manifest", base] + (["--gate"] if gate else [])
            else:
                manifest, coreb = modes[mode]
                cmd = [coreb, "execute", manifest, "--json"]
            out, wall, cpu, _ = timed(cmd)
            if out.returncode != 0:
                failures.append(f"{mode} (round {r + 1}) failed: {out.stderr[-1500:]}")
                continue
            extra = ""
            if mode != "floor":
                got = verdicts_by_solution(args, verdicts_path)
                passed = {k: v["passed"] for k, v in got.items()}
                verdicts.setdefault(mode, []).append(passed)
                record = json.load(open(artifact(args.work, "execute", "record.json")))
                local = record.get("local") or {}
                extra = f"  tests gave way {local.get('tests_gave_way', 0)}"
                judging = local.get("judging") or {}
                if judging.get("batches"):
                    extra += f"  batches {judging['batches']} ({judging.get('batched_tests', 0)} tests kept)"
            runs[mode].append({"round": r + 1, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "load": open("/proc/loadavg").read().split()[0]})
            print(f"round {r + 1}  {mode:<11} wall {wall:8.2f} s  cpu {cpu:8.2f} s  load {runs[mode][-1]['load']}{extra}", flush=True)
    # Against the plain run's pass/fail; without a plain mode, against the first run's.
    plain = (verdicts.get("plain") or verdicts.get("plain@baseline") or next(iter(verdicts.values()), [None]))[0]
    for mode, seen in verdicts.items():
        for v in seen:
            if plain is not None and v != plain:
                differ = sorted(k for k in plain if plain[k] != v.get(k))
                failures.append(f"{mode}: pass/fail differs from the plain run's on {len(differ)} solutions, e.g. {differ[:5]}")
    floor = statistics.median(x["wall_s"] for x in runs["floor"]) if runs["floor"] else None
    summary = {}
    for mode in order:
        if not runs[mode]:
            continue
        med = statistics.median(x["wall_s"] for x in runs[mode])
        per_round = []
        for x in runs[mode]:
            f = next((y["wall_s"] for y in runs["floor"] if y["round"] == x["round"]), None)
            per_round.append(round(x["wall_s"] / f, 3) if f else None)
        summary[mode] = {"median_wall_s": med, "median_cpu_s": statistics.median(x["cpu_s"] for x in runs[mode]),
                         "over_floor": round(med / floor, 3) if floor else None, "over_floor_per_round": per_round, "runs": runs[mode]}
        print(f"{mode:<11} median wall {med:8.2f} s  cpu {summary[mode]['median_cpu_s']:8.2f} s  /floor {summary[mode]['over_floor']}  per round {per_round}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"modes": summary, "failures": failures}, f, indent=1)
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
