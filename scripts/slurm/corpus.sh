#!/usr/bin/env bash
# Curate a training corpus on Slurm with the near-duplicate decision split (issue #35):
#   scripts/slurm/corpus.sh <corpus manifest> <N> <T> [sbatch options...]
# submits, each depending on the one before (afterok):
#   shard     a job array of N tasks: `coreb corpus M --shard I/N` (sketches and spools);
#   exact     one job: `coreb corpus M --dedup-step exact` (repeated ids, exact copies);
#   bands     a job array of T tasks: `coreb corpus M --dedup-step bands --task I/T`;
#   clusters  one job: `coreb corpus M --dedup-step clusters`;
#   merge     one job: `coreb merge corpus M` (curates with the clusters' verdicts).
# N (shard processes) and T (band tasks, at most the manifest's `[dedup] bands`) are
# independent of each other and of `[output] shards`; the output is the one-process output.
# The manifest's `[output] dir` must be on storage every node shares (see docs/corpora.md).
# COREB is the binary (default: `coreb` on PATH). COREB_SLURM_WAIT=1 submits the merge job
# with `sbatch --wait`, so the script returns when the corpus is written.
#
# Without Slurm (COREB_SLURM=shell, or no `sbatch` on PATH) the same job script runs here:
# the tasks of each array as processes at once, SLURM_ARRAY_TASK_ID set per process; the
# first failing task stops the run.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
usage="usage: corpus.sh <corpus manifest> <N> <T> [sbatch options...]"
manifest="${1:?$usage}"
shards="${2:?$usage}"
tasks="${3:?$usage}"
shift 3
export COREB_MANIFEST="$manifest" COREB_SHARDS="$shards" COREB_DEDUP_TASKS="$tasks"
steps=("shard:$shards" "exact:0" "bands:$tasks" "clusters:0" "merge:0")   # step:array size (0: one job)

. "$here/common.sh"

if [ "$(slurm_mode)" = shell ]; then
  echo "corpus.sh: no Slurm here; running each array as local processes" >&2
  for s in "${steps[@]}"; do
    step="${s%%:*}" n="${s#*:}"
    local_array "$step" "$((n > 0 ? n : 1))" env COREB_CORPUS_STEP="$step" bash "$here/corpus.sbatch"
  done
  exit 0
fi

dep=()
for s in "${steps[@]}"; do
  step="${s%%:*}" n="${s#*:}"
  opts=(--parsable --job-name="coreb-corpus-$step" --export="ALL,COREB_CORPUS_STEP=$step")
  if [ "$n" -gt 0 ]; then
    opts+=(--array="0-$((n - 1))" --output="coreb-%x-%A_%a.log")
  else
    opts+=(--output="coreb-%x-%j.log")
  fi
  [ "$step" = merge ] && [ "${COREB_SLURM_WAIT:-}" = 1 ] && opts+=(--wait)
  id=$(sbatch "${opts[@]}" "${dep[@]}" "$@" "$here/corpus.sbatch")
  id="${id%%;*}"
  echo "$step: job $id" >&2
  dep=(--dependency="afterok:$id" --kill-on-invalid-dep=yes)
done
echo "$id"
