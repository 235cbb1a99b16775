#!/usr/bin/env bash
# A private single-node Slurm on this machine, for trying the recipe (and for the test that runs
# it, tests/scaleout.rs):
#   scripts/slurm/single-node.sh <dir> <command> [args...]
# starts munged, slurmctld and slurmd from Debian's `slurm-wlm` and `munge` with every file
# (config, key, sockets, state, logs) under <dir> and /etc untouched, waits until the node is
# idle, runs <command> with SLURM_CONF pointing at the private config, stops the daemons and
# exits with the command's status. Run as root (slurmd runs jobs as their submitter).
# Exits 3, saying why, when the cluster cannot start (missing packages, a daemon that dies).
set -euo pipefail
dir="${1:?usage: single-node.sh <dir> <command> [args...]}"
shift
[ $# -gt 0 ] || { echo "usage: single-node.sh <dir> <command> [args...]" >&2; exit 2; }

cannot() { echo "single-node.sh: Slurm cannot start here: $*" >&2; exit 3; }
for tool in munged mungekey slurmctld slurmd sinfo sbatch; do
  command -v "$tool" >/dev/null || PATH="$PATH:/usr/sbin" command -v "$tool" >/dev/null || cannot "no \`$tool\` (apt-get install slurm-wlm munge)"
done
export PATH="$PATH:/usr/sbin"
[ "$(id -u)" = 0 ] || cannot "not root (SlurmdUser=root runs the jobs)"

mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
chmod 755 "$dir"                     # munged refuses a socket directory others cannot enter
mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
chmod 755 "$dir/munge"
host="$(hostname -s)"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ctld_port="$(free_port)"
d_port="$(free_port)"

cat > "$dir/slurm.conf" <<EOF
ClusterName=coreb
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/sock
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=main Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$dir/slurm.conf"

pids=()
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop EXIT

mungekey -c -f -k "$dir/munge/key" >/dev/null 2>&1 || cannot "mungekey failed"
munged -F -S "$dir/munge/sock" --key-file="$dir/munge/key" --pid-file="$dir/munge/pid" \
  --seed-file="$dir/munge/seed" --log-file="$dir/log/munged.log" 2>"$dir/log/munged.err" &
pids+=($!)
for _ in $(seq 50); do [ -S "$dir/munge/sock" ] && break; sleep 0.1; done
[ -S "$dir/munge/sock" ] || cannot "munged did not start: $(tail -3 "$dir/log/munged.err")"

slurmctld -D >"$dir/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D >"$dir/log/slurmd.out" 2>&1 &
pids+=($!)
state=""
for _ in $(seq 120); do
  state="$(sinfo -h -o %T 2>/dev/null || true)"
  [ "$state" = idle ] && break
  for pid in "${pids[@]}"; do
    kill -0 "$pid" 2>/dev/null || cannot "a daemon exited: $(tail -3 "$dir/log/slurmctld.out" "$dir/log/slurmd.out" 2>/dev/null)"
  done
  sleep 0.5
done
[ "$state" = idle ] || cannot "the node is \`${state:-unknown}\` after 60 s: $(tail -3 "$dir/log/slurmd.log" 2>/dev/null)"
echo "single-node.sh: Slurm up (node $host, $(nproc) CPUs, SLURM_CONF=$SLURM_CONF)" >&2

set +e
"$@"
rc=$?
set -e
exit "$rc"
