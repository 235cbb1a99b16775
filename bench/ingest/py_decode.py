#!/usr/bin/env python3
"""The baseline: a plain Python decode of a LiveCodeBench JSONL, as a user would write it.

json.loads each row, its public tests and metadata; private tests from JSON or from
base64 -> zlib -> pickle -> json. Writes nothing. Prints rows and test counts.
"""
import base64
import json
import pickle
import sys
import zlib


def private(value: str):
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return json.loads(pickle.loads(zlib.decompress(base64.b64decode(value.encode("utf-8")))))


def main() -> None:
    rows = tests = 0
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            tests += len(json.loads(row["public_test_cases"])) + len(private(row["private_test_cases"]))
            json.loads(row["metadata"])
            rows += 1
    print(f"rows={rows} tests={tests}")


if __name__ == "__main__":
    main()
