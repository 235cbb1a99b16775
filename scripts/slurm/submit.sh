#!/usr/bin/env bash
# Submit a whole coreb build as Slurm job arrays:
#   scripts/slurm/submit.sh <manifest> <N> [sbatch options...]
# For each sharded stage, in pipeline order, an array job `--array=0-(N-1)` (task id = shard)
# that depends on the previous one (afterok), then the merge job (`coreb build`) after the last.
# Every path (manifest, output_dir, response store, prompts) must be on storage all nodes
# share; see docs/scale-out.md.
#
# COREB_OUTPUT_DIR / COREB_PUBLISH_DIR override the manifest's directories; COREB is the
# binary (default: `coreb` on PATH). COREB_SLURM_WAIT=1 submits the merge job with
# `sbatch --wait`: the script returns when the build is done, with the merge job's status.
#
# Without Slurm (COREB_SLURM=shell, or no `sbatch` on PATH) the same task scripts run here:
# the N tasks of each array as N processes at once, SLURM_ARRAY_TASK_ID set per process,
# then the merge job; the first failing task stops the run.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
manifest="${1:?usage: submit.sh <manifest> <N> [sbatch options...]}"
shards="${2:?usage: submit.sh <manifest> <N> [sbatch options...]}"
shift 2
stages=(rewrite distract abbreviate generate execute queries)
export COREB_MANIFEST="$manifest" COREB_SHARDS="$shards"

. "$here/common.sh"

if [ "$(slurm_mode)" = shell ]; then
  echo "submit.sh: no Slurm here; running each array as $shards local processes" >&2
  for stage in "${stages[@]}"; do
    local_array "$stage" "$shards" env COREB_STAGE="$stage" bash "$here/shard.sbatch"
  done
  exec bash "$here/merge.sbatch"
fi

dep=()
for stage in "${stages[@]}"; do
  id=$(sbatch --parsable "${dep[@]}" --array="0-$((shards - 1))" --export="ALL,COREB_STAGE=$stage" "$@" "$here/shard.sbatch")
  id="${id%%;*}"
  echo "$stage: array job $id" >&2
  dep=(--dependency="afterok:$id" --kill-on-invalid-dep=yes)
done
wait=()
[ "${COREB_SLURM_WAIT:-}" = 1 ] && wait=(--wait)
id=$(sbatch --parsable "${wait[@]}" "${dep[@]}" --export=ALL "$@" "$here/merge.sbatch")
echo "merge: job ${id%%;*}" >&2
echo "${id%%;*}"
