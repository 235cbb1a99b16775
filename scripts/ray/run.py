#!/usr/bin/env python3
"""A coreb month (or a training corpus) as Ray tasks on an existing Ray cluster.

    python scripts/ray/run.py build <manifest> <N> [options]
    python scripts/ray/run.py corpus <corpus manifest> <N> <T> [options]

`build`: for each sharded stage, in pipeline order (rewrite, distract, abbreviate, generate,
execute, queries), N tasks `coreb <stage> <manifest> --shard I/N`, then one task of the merge,
`coreb build <manifest>`, which combines every stage's parts and runs qrels and release.
`corpus`: N tasks `coreb corpus M --shard I/N`, `--dedup-step exact`, T tasks `--dedup-step
bands --task I/T`, `--dedup-step clusters`, then `coreb merge corpus M`. The steps of the Slurm
recipe (scripts/slurm/), each step after the one before has finished.

The guarantees are the Slurm recipe's: a step starts only once every task of the one before has
succeeded, so a shard that failed (after its retries) stops the run before the merge, naming it
and its log, with exit status 1; and a run of the same command again resumes, since a shard
process whose part is complete does nothing. A task whose process failed (an exit other than 2,
which is a usage error and is not retried) or whose worker died is run again, up to
`--retries` times.

What the cluster must give: the coreb binary at the same path on every node (`--coreb`, else
$COREB, else `coreb` on PATH) and the manifest, its output directory, the response store and
the prompts on storage every node shares (docs/scale-out.md). The driver only connects
(`--address`, else $RAY_ADDRESS, else Ray's own discovery); it starts nothing. Each task asks
for `--cpus-per-task` CPUs and gives coreb as many threads (`--jobs`, or RAYON_NUM_THREADS for
the corpus). Each task's output is kept in `--logs DIR/<step>-<i>.log` (the last attempt's).
Exit status: 0 done, 1 a task failed, 2 usage, 3 no cluster to connect to.
"""

import argparse
import os
import shutil
import subprocess
import sys
import time

STAGES = ["rewrite", "distract", "abbreviate", "generate", "execute", "queries"]
# How much of a task's output comes back to the driver (the whole of it is in its log).
TAIL_BYTES = 64 << 10


def say(line):
    print(f"ray/run.py: {line}", file=sys.stderr, flush=True)


def coreb_task(argv, env):
    """Run one coreb process on the node the task landed on; its status and output."""
    import ray

    started = time.monotonic()
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
            check=False,
        )
        status, output = done.returncode, done.stdout[-TAIL_BYTES:].decode("utf-8", "replace")
    except OSError as e:  # not there, not executable: as a shell says it
        status, output = 127, f"cannot start `{argv[0]}` on this node: {e}\n"
    return {
        "status": status,
        "output": output,
        "seconds": round(time.monotonic() - started, 3),
        "node": ray.get_runtime_context().get_node_id()[:12],
    }


class Step:
    """One step: a name and its tasks, each an argv and an environment."""

    def __init__(self, name, tasks):
        self.name = name
        self.tasks = tasks


def build_steps(args, coreb):
    common = []
    if args.output_dir:
        common += ["--output-dir", args.output_dir]
    jobs = ["--jobs", str(args.cpus_per_task)]
    steps = []
    for stage in STAGES:
        steps.append(Step(stage, [
            ([coreb, stage, args.manifest, "--shard", f"{i}/{args.shards}"] + common + jobs, {})
            for i in range(args.shards)
        ]))
    merge = [coreb, "build", args.manifest] + common + jobs
    if args.publish_dir:
        merge += ["--publish-dir", args.publish_dir]
    steps.append(Step("merge", [(merge, {})]))
    return steps


def corpus_steps(args, coreb):
    env = {"RAYON_NUM_THREADS": str(args.cpus_per_task)}
    m = args.manifest
    return [
        Step("shard", [([coreb, "corpus", m, "--shard", f"{i}/{args.shards}"], env)
                       for i in range(args.shards)]),
        Step("exact", [([coreb, "corpus", m, "--dedup-step", "exact"], env)]),
        Step("bands", [([coreb, "corpus", m, "--dedup-step", "bands", "--task", f"{i}/{args.tasks}"], env)
                       for i in range(args.tasks)]),
        Step("clusters", [([coreb, "corpus", m, "--dedup-step", "clusters"], env)]),
        Step("merge", [([coreb, "merge", "corpus", m], env)]),
    ]


def run_step(ray, remote, step, args):
    """Run a step's tasks at once, each retried up to `args.retries` times; True when every
    one succeeded."""
    n = len(step.tasks)
    label = (lambda i: f"{step.name} {i}/{n}") if n > 1 else (lambda i: step.name)
    pending = {}

    def submit(i, attempt):
        argv, env = step.tasks[i]
        ref = remote.options(num_cpus=args.cpus_per_task, max_retries=args.retries).remote(argv, env)
        pending[ref] = (i, attempt)

    for i in range(n):
        submit(i, 1)
    failed = []
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        i, attempt = pending.pop(ready[0])
        log = os.path.join(args.logs, f"{step.name}-{i}.log")
        try:
            result = ray.get(ready[0])
        except Exception as e:  # the worker died more often than Ray retries: a failed attempt
            result = {"status": None, "output": f"{type(e).__name__}: {e}\n", "seconds": 0, "node": "?"}
        with open(log, "w", encoding="utf-8") as f:
            f.write(result["output"])
        status = result["status"]
        if status == 0:
            say(f"{label(i)}: done in {result['seconds']:.1f} s on node {result['node']} (attempt {attempt}; {log})")
            continue
        what = "its worker died" if status is None else f"exit {status}"
        if status != 2 and attempt <= args.retries:
            say(f"{label(i)}: attempt {attempt} failed ({what}); retrying")
            submit(i, attempt + 1)
            continue
        say(f"{label(i)}: failed ({what}) after {attempt} attempt(s); its output: {log}")
        tail = result["output"].strip().splitlines()[-5:]
        for line in tail:
            print(f"    {line}", file=sys.stderr)
        failed.append(label(i))
    if failed:
        say(f"{step.name}: {len(failed)} of {n} task(s) failed ({', '.join(failed)}); "
            "nothing after it runs. Run the same command again to resume: complete shards are kept")
        return False
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    b = sub.add_parser("build", help="a build's shard processes, then the merge")
    b.add_argument("manifest")
    b.add_argument("shards", type=int, help="N: shard processes per sharded stage")
    b.add_argument("--output-dir", default=os.environ.get("COREB_OUTPUT_DIR"),
                   help="the build's output directory (default: $COREB_OUTPUT_DIR, else the manifest's)")
    b.add_argument("--publish-dir", default=os.environ.get("COREB_PUBLISH_DIR"),
                   help="where the merge publishes the release (default: $COREB_PUBLISH_DIR)")
    c = sub.add_parser("corpus", help="a corpus's shard processes and near-duplicate tasks, then the merge")
    c.add_argument("manifest")
    c.add_argument("shards", type=int, help="N: shard processes")
    c.add_argument("tasks", type=int, help="T: band tasks (at most the manifest's [dedup] bands)")
    for q in (b, c):
        q.add_argument("--address", default=os.environ.get("RAY_ADDRESS"),
                       help="the cluster (default: $RAY_ADDRESS, else Ray's discovery)")
        q.add_argument("--coreb", default=os.environ.get("COREB", "coreb"),
                       help="the coreb binary, at the same path on every node (default: $COREB, else coreb)")
        q.add_argument("--cpus-per-task", type=int, default=1, help="CPUs (and coreb threads) per task")
        q.add_argument("--retries", type=int, default=2, help="attempts after a task's first failure")
        q.add_argument("--logs", default="ray-logs", help="where each task's output is kept")
    args = p.parse_args()
    for name in ("shards", "tasks", "cpus_per_task"):
        if getattr(args, name, 1) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.retries < 0:
        p.error("--retries must be at least 0")
    if not os.path.isfile(args.manifest):
        p.error(f"no manifest at `{args.manifest}`")
    # Every node sees the same paths: make them absolute here.
    args.manifest = os.path.abspath(args.manifest)
    for name in ("output_dir", "publish_dir"):
        if getattr(args, name, None):
            setattr(args, name, os.path.abspath(getattr(args, name)))
    coreb = args.coreb
    if os.sep in coreb:
        coreb = os.path.abspath(coreb)
    elif shutil.which(coreb):
        coreb = shutil.which(coreb)
    os.makedirs(args.logs, exist_ok=True)

    import ray

    try:
        ray.init(address=args.address or "auto", logging_level="ERROR", log_to_driver=False)
    except Exception as e:  # no cluster, or not one this ray can speak to
        say(f"cannot connect to a Ray cluster at `{args.address or 'auto'}`: {e}")
        return 3
    remote = ray.remote(coreb_task)
    steps = build_steps(args, coreb) if args.what == "build" else corpus_steps(args, coreb)
    say(f"{len(steps)} steps on {int(ray.cluster_resources().get('CPU', 0))} CPUs, coreb `{coreb}`")
    for step in steps:
        if not run_step(ray, remote, step, args):
            return 1
    say("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
