#!/usr/bin/env python3
"""The execute floor: the same programs compiled with the judge's commands and run on the
same tests as bare processes (no sandbox, no namespaces, no cgroup), `--jobs` solutions at
once, each test under the judge's wall limit times the language's multiplier.

Usage: floor.py BUILD_DIR --coreb COREB --manifest MANIFEST [--jobs 2] [--wall-ms 4000]
                [--gate] [--out FILE]

The programs are the judge's own (`coreb programs`: the language's prelude, and a LeetCode
solution inside its I/O driver). Like the judge, every test of a solution runs, public then
private; with `--gate` (the manifest's `skip_private_after_public_failure`) the private tests
run only after every public one passed. Reads the problems `execute` judged
(`artifacts/rewrite/problems.parquet`), prints wall and children's CPU, and the share of
solutions whose pass/fail agrees with `artifacts/execute/verdicts.parquet`, and per language
the summed wall seconds of compiling and of running the tests. Needs pyarrow.
"""
import argparse
import gzip
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
JAVA_RUN = ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData", "-Xss64m", "-cp", "{dir}", "{main_class}"]
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


def judge(program, tests, public, work, wall_ms, env, gate):
    """Compile `program` (a line of `coreb programs`' index) and run it on every test; its
    pass/fail, and the wall seconds of its compile and of its tests (summed)."""
    d = tempfile.mkdtemp(dir=work)
    try:
        _, compile_argv, run_argv = RECIPES[program["language"]]
        src = os.path.join(d, os.path.basename(program["file"]))
        shutil.copyfile(program["path"], src)
        fill = lambda argv: [a.replace("{src}", src).replace("{dir}", d).replace("{main_class}", program["main_class"] or "Main") for a in argv]  # noqa: E731
        t0 = time.monotonic()
        c = subprocess.run(fill(compile_argv), cwd=d, capture_output=True, env=env)
        compile_wall = time.monotonic() - t0
        if c.returncode != 0:
            return False, compile_wall, 0.0
        limit = wall_ms * MULT[program["language"]] / 1000
        passed = True
        t0 = time.monotonic()
        for i, t in enumerate(tests):
            if gate and i == public and not passed:
                break
            try:
                r = subprocess.run(fill(run_argv), cwd=d, input=t["input"].encode(), capture_output=True, timeout=limit, env=env)
                ok = r.returncode == 0 and same(r.stdout.decode(errors="replace"), t["output"], t.get("testtype") == "functional")
            except subprocess.TimeoutExpired:
                ok = False
            passed = passed and ok
        return passed, compile_wall, time.monotonic() - t0
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build")
    p.add_argument("--jobs", type=int, default=os.cpu_count())
    p.add_argument("--wall-ms", type=int, default=4000)
    p.add_argument("--coreb", required=True)
    p.add_argument("--manifest", required=True)
    p.add_argument("--gate", action="store_true", help="run private tests only after every public one passed")
    p.add_argument("--verdicts", help="the judge's pass/fail to compare with: a verdicts.parquet, or a plain run recorded by "
                                      "`run.py --save-plain` (.json.gz); default: the build's artifacts/execute/verdicts.parquet")
    p.add_argument("--out")
    args = p.parse_args()
    art = os.path.join(args.build, "artifacts")
    programs_dir = tempfile.mkdtemp(prefix="floor-programs-")
    subprocess.run([args.coreb, "programs", args.manifest, "--out", programs_dir], check=True, capture_output=True)
    with open(os.path.join(programs_dir, "index.jsonl")) as f:
        sols = [json.loads(line) for line in f]
    for s in sols:
        s["path"] = os.path.join(programs_dir, s["file"])
    problems = {r["id"]: r for r in pq.read_table(os.path.join(art, "rewrite", "problems.parquet")).to_pylist()}
    if args.verdicts and args.verdicts.endswith(".json.gz"):
        with gzip.open(args.verdicts, "rt") as f:
            verdicts = {sid: v["passed"] for sid, v in json.load(f)["verdicts"].items()}
    else:
        path = args.verdicts or os.path.join(art, "execute", "verdicts.parquet")
        verdicts = {r["solution_id"]: r["passed"] for r in pq.read_table(path, columns=["solution_id", "passed"]).to_pylist()}
    work = tempfile.mkdtemp(prefix="floor-")
    env = dict(os.environ, GOCACHE=os.path.join(work, ".gocache"), GOPATH=os.path.join(work, ".gopath"), CGO_ENABLED="0", GO111MODULE="off")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    with ThreadPoolExecutor(args.jobs) as pool:
        def one(s):
            pr = problems[s["problem_id"]]
            tests = list(pr["public_tests"]) + list(pr["private_tests"])
            return (s["solution_id"], s["language"]), judge(s, tests, len(pr["public_tests"]), work, args.wall_ms, env, args.gate)
        timed = list(pool.map(one, sols))
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(programs_dir, ignore_errors=True)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    results = [(sid, ok) for (sid, _), (ok, _, _) in timed]
    agree = sum(1 for sid, ok in results if verdicts.get(sid) == ok)
    per = {}
    for (_, lang), (_, compile_wall, test_wall) in timed:
        c = per.setdefault(lang, {"solutions": 0, "compile_wall_s": 0.0, "test_wall_s": 0.0})
        c["solutions"] += 1
        c["compile_wall_s"] += compile_wall
        c["test_wall_s"] += test_wall
    per = {lang: {k: round(v, 2) for k, v in c.items()} for lang, c in sorted(per.items())}
    out = {"solutions": len(results), "passed": sum(ok for _, ok in results), "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "jobs": args.jobs,
           "agree_with_judge": agree, "per_language": per}
    print(json.dumps(out))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
