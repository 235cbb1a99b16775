"""Reading and writing JSON Lines files, for the test scripts beside this one."""
import json


def jsonl(path):
    """Every non-blank line of `path`, parsed."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_jsonl(path, rows, ensure_ascii=True):
    """`rows` as JSON Lines into `path` (non-ASCII characters escaped unless `ensure_ascii` is
    false)."""
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=ensure_ascii) + "\n")
