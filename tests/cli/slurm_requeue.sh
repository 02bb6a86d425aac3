#!/usr/bin/env bash
# SLURM for real: a one-node cluster of our own (munged, slurmctld and slurmd
# from a generated slurm.conf, no cgroups, private ports and sockets), the
# job script scripts/slurm/distzo.sbatch submitted with a small deck over 2
# tasks (MPICH through srun --mpi=pmi2), requeued mid-run with `scontrol
# requeue`. The job must restart at least once, resume from a step N with
# 0 < N < steps, and end with the digest of a run never interrupted.
#
# Needs root (slurmd and munged) and the slurm-wlm and munge packages
# (scripts/install-debian-deps.sh --test). Elsewhere it skips with a message
# (exit 77); with CI set in the environment a skip is a failure.
# Usage: slurm_requeue.sh DISTZO TEST_DATA SBATCH_SCRIPT
sbatch_script=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
source "$(dirname "$0")/lib.sh" "$1" "$2"

skip() {
  [ -z "${CI:-}" ] || fail "$* (CI is set: this test must run there)"
  echo "skipped: $*"
  exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root to start slurmd and munged"
for tool in munged slurmctld slurmd sbatch srun scontrol sinfo runuser; do
  command -v "$tool" > /dev/null || skip "$tool not found (scripts/install-debian-deps.sh --test installs SLURM and munge)"
done
[ -r /etc/munge/munge.key ] || skip "no munge key at /etc/munge/munge.key"

# The cluster lives in $WORK; munged runs as its user, who must reach its socket.
chmod 755 "$WORK"
mkdir -p munge slurm/state slurm/spool
chown munge: munge
host=$(hostname -s)
port=$((20000 + RANDOM % 20000))
daemons=()
job=
cleanup() {
  # The job first (a failed test must not leave it running), then the daemons.
  [ -z "$job" ] || scancel --full "$job" 2> /dev/null || true
  sleep 1
  for pid in "${daemons[@]}"; do kill "$pid" 2>/dev/null || true; done
  kill_leftovers
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
logs() { for f in munge/munged.log slurm/slurmctld.log slurm/slurmd.log job.out; do [ -f "$f" ] && { echo "== $f"; tail -20 "$f"; }; done; }

runuser -u munge -- munged --foreground --socket="$WORK/munge/socket" --pid-file="$WORK/munge/pid" \
  --log-file="$WORK/munge/munged.log" --seed-file="$WORK/munge/seed" > munge/munged.out 2>&1 &
daemons+=($!)
cat > slurm.conf <<EOF
ClusterName=distzotest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
AuthType=auth/munge
# cred_expire is also how long a requeued job waits before it may start again (default 120 s)
AuthInfo=socket=$WORK/munge/socket,cred_expire=10
CredType=cred/munge
StateSaveLocation=$WORK/slurm/state
SlurmdSpoolDir=$WORK/slurm/spool
SlurmctldPidFile=$WORK/slurm/slurmctld.pid
SlurmdPidFile=$WORK/slurm/slurmd.pid
SlurmctldLogFile=$WORK/slurm/slurmctld.log
SlurmdLogFile=$WORK/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=pmi2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
MinJobAge=600
KillWait=20
NodeName=$host NodeAddr=127.0.0.1 CPUs=4 RealMemory=2000 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$WORK/slurm.conf
for _ in $(seq 50); do [ -S munge/socket ] && break; sleep 0.1; done
[ -S munge/socket ] || { logs; skip "munged did not start"; }
slurmctld -D -i -f "$SLURM_CONF" > slurm/slurmctld.out 2>&1 &
daemons+=($!)
slurmd -D -f "$SLURM_CONF" > slurm/slurmd.out 2>&1 &
daemons+=($!)
state=
for _ in $(seq 100); do
  state=$(sinfo -h -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.2
done
[ "$state" = idle ] || { logs; cat slurm/*.out; skip "the one-node cluster did not come up (node state '$state')"; }
pass "one-node cluster up: munged, slurmctld and slurmd on ports $port-$((port + 1))"

# The deck: long enough to be requeued mid-run, resuming from the latest checkpoint.
steps=4000
deck job $steps run 'checkpoint:' '  interval: 0' '  resume: latest' 'parallel:' '  perturbation: 2'
job=$(sbatch --parsable --nodes=1 --ntasks=2 --ntasks-per-node=2 --cpus-per-task=1 --time=30 \
  --open-mode=append --output="$WORK/job.out" --chdir="$WORK" \
  --export=ALL,PATH="$(dirname "$DISTZO"):$PATH" "$sbatch_script" job.yaml) || { logs; fail "sbatch failed"; }
job_field() { scontrol show job "$job" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# Deadlines in seconds, generous for slow builds (sanitizers) on 2 cores.
deadline=$((SECONDS + 300))
until [ -s run/metrics.csv ] && [ "$(wc -l < run/metrics.csv)" -gt 500 ]; do
  [ "$(job_field JobState)" != FAILED ] || { logs; fail "job $job failed before the requeue"; }
  [ $SECONDS -lt $deadline ] || { logs; fail "job $job made no progress in 300 s"; }
  sleep 0.2
done
scontrol requeue "$job" || { logs; fail "scontrol requeue $job failed"; }
deadline=$((SECONDS + 900))
while :; do
  state=$(job_field JobState)
  case "$state" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL) break ;; esac
  [ $SECONDS -lt $deadline ] || break
  sleep 0.5
done
[ "$state" = COMPLETED ] || { logs; fail "job $job ended $state, expected COMPLETED"; }
restarts=$(job_field Restarts)
[ "${restarts:-0}" -ge 1 ] || { logs; fail "job $job never restarted (Restarts=$restarts)"; }
n=$(sed -n 's/.*resuming from .*ckpt-0*\([0-9][0-9]*\)\.h5.*/\1/p' job.out | tail -1)
[ -n "$n" ] && [ "$n" -gt 0 ] && [ "$n" -lt $steps ] || { logs; fail "no resume from a step 0 < N < $steps in job.out"; }
grep -q "stopped by a signal after step $n, checkpointed" job.out ||
  { logs; fail "the requeue did not stop distzo at a checkpoint of step $n"; }

deck straight $steps straight 'checkpoint:' '  interval: 0'
"$DISTZO" run straight.yaml > straight.log 2>&1 || { cat straight.log; fail "the uninterrupted run failed"; }
final=$(printf 'ckpt-%06d.h5' $steps)
[ "$(digest run/$final)" = "$(digest straight/$final)" ] ||
  fail "requeued at step $n and resumed: digest differs from the uninterrupted run"
pass "sbatch over 2 tasks (srun --mpi=pmi2), requeued: restarted $restarts time(s), resumed at step $n of $steps, digest = uninterrupted run"
