#!/usr/bin/env bash
# A private Ray cluster on this machine, for trying the recipe (and for the test that runs it,
# tests/scaleout.rs):
#   scripts/ray/local-cluster.sh <dir> <command> [args...]
# starts a head and two worker nodes (one CPU each; `ray` from the venv scripts/setup-ray
# makes, or $COREB_RAY_VENV) with their sessions and logs under <dir>, waits until all three
# have joined, runs <command> with RAY_ADDRESS pointing at the head, stops the nodes it
# started (by their process ids; nothing else is touched) and exits with the command's status.
# Exits 3, saying why, when the cluster cannot start (no venv, a node that does not join).
set -euo pipefail
usage="usage: local-cluster.sh <dir> <command> [args...]"
dir="${1:?$usage}"
shift
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${COREB_RAY_VENV:-$root/.venv-ray}"
cannot() { echo "local-cluster.sh: Ray cannot start here: $*" >&2; exit 3; }
[ -x "$venv/bin/ray" ] || cannot "no \`ray\` in $venv (run scripts/setup-ray)"
export RAY_USAGE_STATS_ENABLED=0
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
# Each node: one CPU, a small object store (tasks pass only their exit status and log tail).
node=(--block --num-cpus 1 --object-store-memory 100000000 --disable-usage-stats)

pids=()
stop() {
  # `ray start --block` stops the processes of its node when it gets SIGTERM.
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop EXIT

nodes_alive() {
  "$venv/bin/python" - "$port" <<'PY' 2>/dev/null || echo 0
import sys, ray
ray.init(address=f"127.0.0.1:{sys.argv[1]}", logging_level="ERROR", log_to_driver=False)
print(sum(1 for n in ray.nodes() if n["Alive"]))
PY
}
# wait_for <n> <what>: until n nodes are alive (the nodes join one at a time: two starting at
# once on one host can time out against each other).
wait_for() {
  local i
  for ((i = 0; i < 60; i++)); do
    [ "$(nodes_alive)" -ge "$1" ] && return 0
    for pid in "${pids[@]}"; do
      kill -0 "$pid" 2>/dev/null || cannot "$2 stopped (see $dir/*.log)"
    done
    sleep 2
  done
  cannot "$2 did not join within two minutes (see $dir/*.log)"
}

"$venv/bin/ray" start --head --port "$port" --include-dashboard=false --temp-dir "$dir/ray" \
  "${node[@]}" >"$dir/head.log" 2>&1 &
pids+=($!)
wait_for 1 "the head"
for w in 1 2; do
  "$venv/bin/ray" start --address "127.0.0.1:$port" "${node[@]}" >"$dir/worker-$w.log" 2>&1 &
  pids+=($!)
  wait_for $((w + 1)) "worker $w"
done
echo "local-cluster.sh: a head and 2 workers at 127.0.0.1:$port" >&2
status=0
RAY_ADDRESS="127.0.0.1:$port" "$@" || status=$?
exit "$status"
