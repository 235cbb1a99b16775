from typing import *
import json as _coreb_json
import sys as _coreb_sys

{{solution}}


def _coreb_convert(value, kind):
    if kind.startswith("list:"):
        return [_coreb_convert(v, kind[5:]) for v in value]
    if kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _coreb_main():
    lines = _coreb_sys.stdin.read().split("\n")
    kinds = {{types}}
    if len(lines) < len(kinds):
        raise SystemExit("coreb driver: %d argument lines, %d parameters" % (len(lines), len(kinds)))
    args = [_coreb_convert(_coreb_json.loads(lines[i]), kind) for i, kind in enumerate(kinds)]
    result = Solution().{{method}}(*args)
    _coreb_sys.stdout.write(_coreb_json.dumps(result, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    _coreb_main()
