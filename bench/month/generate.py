#!/usr/bin/env python3
"""Write an LCB-shaped JSONL of N problems whose private tests are encoded exactly as
LiveCodeBench encodes them: base64(zlib(pickle(json.dumps(tests)))) (pickle protocol 4, as
the published rows), with expected outputs computed by the reference solutions of
`month_lib`.

Usage: generate.py OUT.jsonl N [--tests 30] [--max-elements 400000] [--seed 1]
                                [--month 2025-05]

Test sizes run from 1 element to `--max-elements` (log-uniform, the largest test of every
problem at the maximum), so with the default the biggest inputs and outputs are a few MB.
Problems alternate stdin (AtCoder-style) and functional (LeetCode) templates.
"""
import argparse
import base64
import json
import math
import os
import pickle
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import month_lib as lib  # noqa: E402


def encode_private(tests) -> str:
    """LiveCodeBench's encoding of `private_test_cases`."""
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests), protocol=4))).decode()


def statement(qid: str, template: str) -> str:
    t = lib.TEMPLATES[template]
    return f"{lib.story(qid, 90)}\n\n{t['task']}\n\n{t['sections']}"


def problem(index: int, args) -> dict:
    qid = f"m{index:05d}"
    template = lib.template_of(index)
    t = lib.TEMPLATES[template]
    r = lib.rng("tests", args.seed, qid)
    tests = []
    for k in range(args.tests):
        # log-uniform sizes; the last test of a problem is the largest.
        frac = k / max(args.tests - 1, 1)
        size = max(1, int(math.exp(frac * math.log(args.max_elements)) * r.uniform(0.5, 1.0))) if k < args.tests - 1 else args.max_elements
        data = lib.test_data(template, r, size)
        tests.append({"input": lib.test_input(template, data), "output": lib.solve(template, data), "testtype": t["kind"]})
    public, private = tests[:2], tests[2:]
    day = 1 + index % 28
    functional = t["kind"] == "functional"
    return {
        "question_title": f"{lib.story(qid + 'title', 3).rstrip('.')} {qid}",
        "question_content": statement(qid, template),
        "platform": "leetcode" if functional else "atcoder",
        "question_id": qid,
        "contest_id": f"month-{args.month}-{index // 4}",
        "contest_date": f"{args.month}-{day:02d}T12:00:00",
        "starter_code": t["starter"].format(m=t["method"]) if functional else "",
        "difficulty": ["easy", "medium", "hard"][index % 3],
        "public_test_cases": json.dumps(public),
        "private_test_cases": encode_private(private),
        "metadata": json.dumps({"func_name": t["method"]} if functional else {}),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("n", type=int)
    p.add_argument("--tests", type=int, default=30)
    p.add_argument("--max-elements", type=int, default=400_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--month", default="2025-05")
    args = p.parse_args()
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for i in range(args.n):
            f.write(json.dumps(problem(i, args)) + "\n")
    os.replace(tmp, args.out)
    print(f"{args.out}: {args.n} problems, {os.path.getsize(args.out) / 2**20:.1f} MiB", file=sys.stderr)


if __name__ == "__main__":
    main()
