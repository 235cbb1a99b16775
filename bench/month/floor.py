#!/usr/bin/env python3
"""The execute floor: the same solutions compiled with the judge's commands and run on the
same tests as bare processes (no sandbox, no namespaces, no cgroup), `--jobs` solutions at
once, each test under the judge's wall limit times the language's multiplier.

Usage: floor.py BUILD_DIR [--jobs 2] [--wall-ms 4000] [--out FILE]

Reads `BUILD_DIR/artifacts/generate/solutions.parquet` and the problems `execute` judged
(`artifacts/rewrite/problems.parquet`), prints wall and children's CPU, and the share of
solutions whose pass/fail agrees with `artifacts/execute/verdicts.parquet`. Needs pyarrow.
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import pyarrow.parquet as pq

MULT = {"python": 3, "ruby": 3, "java": 2, "cpp": 1, "go": 1}
JAVA_RUN = ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData", "-Xss64m", "-cp", "{dir}", "Main"]
RECIPES = {
    "python": ("main.py", ["python3", "-m", "py_compile", "{src}"], ["python3", "{src}"]),
    "cpp": ("main.cpp", ["g++", "-std=c++17", "-O2", "-pipe", "-o", "{dir}/main", "{src}"], ["{dir}/main"]),
    "java": ("Main.java", ["javac", "-encoding", "UTF-8", "-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1", "-d", "{dir}", "{src}"], JAVA_RUN),
    "go": ("main.go", ["go", "build", "-o", "{dir}/main", "{src}"], ["{dir}/main"]),
    "ruby": ("main.rb", ["ruby", "-c", "{src}"], ["ruby", "{src}"]),
}


def same(got: str, want: str, functional: bool) -> bool:
    if got.split() == want.split():
        return True
    if functional:
        try:
            return json.loads(got) == json.loads(want)
        except ValueError:
            return False
    return False


def judge(sol, tests, work, wall_ms, env):
    d = tempfile.mkdtemp(dir=work)
    try:
        name, compile_argv, run_argv = RECIPES[sol["language"]]
        src = os.path.join(d, name)
        with open(src, "w") as f:
            f.write(sol["code"])
        fill = lambda argv: [a.replace("{src}", src).replace("{dir}", d) for a in argv]  # noqa: E731
        c = subprocess.run(fill(compile_argv), cwd=d, capture_output=True, env=env)
        if c.returncode != 0:
            return False
        limit = wall_ms * MULT[sol["language"]] / 1000
        for t in tests:
            try:
                r = subprocess.run(fill(run_argv), cwd=d, input=t["input"].encode(), capture_output=True, timeout=limit, env=env)
            except subprocess.TimeoutExpired:
                return False
            if r.returncode != 0 or not same(r.stdout.decode(errors="replace"), t["output"], t.get("testtype") == "functional"):
                return False
        return True
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build")
    p.add_argument("--jobs", type=int, default=os.cpu_count())
    p.add_argument("--wall-ms", type=int, default=4000)
    p.add_argument("--out")
    args = p.parse_args()
    art = os.path.join(args.build, "artifacts")
    sols = pq.read_table(os.path.join(art, "generate", "solutions.parquet")).to_pylist()
    problems = {r["id"]: r for r in pq.read_table(os.path.join(art, "rewrite", "problems.parquet")).to_pylist()}
    verdicts = {r["solution_id"]: r["passed"] for r in pq.read_table(os.path.join(art, "execute", "verdicts.parquet"), columns=["solution_id", "passed"]).to_pylist()}
    work = tempfile.mkdtemp(prefix="floor-")
    env = dict(os.environ, GOCACHE=os.path.join(work, ".gocache"), GOPATH=os.path.join(work, ".gopath"), CGO_ENABLED="0", GO111MODULE="off")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    with ThreadPoolExecutor(args.jobs) as pool:
        def one(s):
            pr = problems[s["problem_id"]]
            tests = list(pr["public_tests"]) + list(pr["private_tests"])
            return s["id"], judge(s, tests, work, args.wall_ms, env)
        results = list(pool.map(one, sols))
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(work, ignore_errors=True)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    agree = sum(1 for sid, ok in results if verdicts.get(sid) == ok)
    out = {"solutions": len(results), "passed": sum(ok for _, ok in results), "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "jobs": args.jobs,
           "agree_with_judge": agree}
    print(json.dumps(out))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
