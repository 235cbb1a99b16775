#!/usr/bin/env bash
# The execute benchmark of another revision beside this checkout's, in one run: both bench
# binaries are built, then run alternately (ROUNDS times each, `--skip-naive`), and the median
# throughput of each and their ratio are printed with the machine's load.
#
#   bench/execute/compare.sh <old-rev> [ROUNDS] [-- extra bench args]
#
# The old revision is exported with `git archive` into a temporary directory and built into
# the same target directory (dependencies are shared). Set CARGO_TARGET_DIR as usual.
set -euo pipefail
cd "$(dirname "$0")/../.."
old=${1:?usage: bench/execute/compare.sh <old-rev> [ROUNDS] [-- bench args]}
rounds=${2:-3}
shift $(( $# >= 2 ? 2 : 1 ))
[ "${1:-}" = "--" ] && shift
extra=("$@")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git archive "$old" | tar -x -C "$work"

bench_binary() { # <dir>: build the bench there, print its executable
  (cd "$1" && cargo bench -p coreb-stages --bench execute --no-run --message-format=json 2>/dev/null) |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "execute" and m.get("executable"):
        print(m["executable"])' | tail -1
}
echo "building the bench of $old and of this checkout …" >&2
before=$(bench_binary "$work")
cp "$before" "$work/execute-before"
after=$(bench_binary .)
cp "$after" "$work/execute-after"

# The old binary reads its fixtures relative to its own source tree.
run() { # <label> <binary> <dir>
  (cd "$3" && "$2" --skip-naive "${extra[@]}") | sed "s/^/$1 /"
}
: > "$work/results"
for r in $(seq "$rounds"); do
  echo "round $r — load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  run before "$work/execute-before" "$work" | tee -a "$work/results"
  run after "$work/execute-after" . | tee -a "$work/results"
done
python3 - "$work/results" <<'EOF'
import re, statistics, sys
rates = {"before": [], "after": []}
for line in open(sys.argv[1]):
    m = re.match(r"(before|after) coreb .* ([0-9.]+) tests/s", line)
    if m:
        rates[m.group(1)].append(float(m.group(2)))
b, a = statistics.median(rates["before"]), statistics.median(rates["after"])
print(f"median tests/s: before {b:.2f} ({rates['before']}), after {a:.2f} ({rates['after']})")
print(f"after / before throughput: {a / b:.3f}")
EOF
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores" >&2
