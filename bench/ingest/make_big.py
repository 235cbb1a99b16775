#!/usr/bin/env python3
"""Make a large LiveCodeBench-style JSONL by repeating the rows of a file.

Usage: make_big.py SOURCE.jsonl OUT.jsonl SIZE_MB

Each copy of a row gets a unique question_id (`<id>_r<k>`) so that ids stay distinct; every
other field is the original, including the base64/zlib/pickle-encoded private tests.
"""
import json
import sys


def main() -> None:
    source, out, size_mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rows = [json.loads(line) for line in open(source, encoding="utf-8") if line.strip()]
    target = size_mb << 20
    written = 0
    copy = 0
    with open(out, "w", encoding="utf-8") as f:
        while written < target:
            for row in rows:
                r = dict(row)
                r["question_id"] = f"{row['question_id']}_r{copy}"
                line = json.dumps(r, ensure_ascii=False) + "\n"
                f.write(line)
                written += len(line.encode("utf-8"))
                if written >= target:
                    break
            copy += 1
    print(f"{out}: {written / 2**20:.0f} MiB, {copy} copies of {len(rows)} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
