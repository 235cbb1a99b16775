# Sourced by the recipes (submit.sh, corpus.sh): what they share.

# Where the recipe runs: `slurm` (sbatch), or `shell` (the job scripts as local processes);
# COREB_SLURM chooses, else whether `sbatch` is on PATH.
slurm_mode() {
  local mode="${COREB_SLURM:-}"
  if [ -z "$mode" ]; then
    if command -v sbatch >/dev/null; then mode=slurm; else mode=shell; fi
  fi
  echo "$mode"
}

# local_array <what> <n> <command...>: a job array without Slurm: the command as n processes at
# once, SLURM_ARRAY_TASK_ID=0..n-1 set per process; exits at the first failed task.
local_array() {
  local what="$1" n="$2" i pid pids=()
  shift 2
  for ((i = 0; i < n; i++)); do
    SLURM_ARRAY_TASK_ID="$i" "$@" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || { echo "$(basename "$0"): a $what task failed" >&2; exit 1; }
  done
}
