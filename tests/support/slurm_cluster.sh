# A SLURM cluster of our own for the tests that submit
# scripts/slurm/distzo.sbatch (source it after tests/cli/lib.sh, and after
# tests/support/nodes.sh where the cluster spans its nodes):
#
#   slurm_require               skips (exit 77) without root, SLURM or munge;
#                               with CI set a skip is a failure
#   slurm_start_munged [-n K]   munged as user munge, its socket in $WORK/munge
#                               (on node K with -n: a test killed outright
#                               leaves it to nodes.sh's removal of stale nodes)
#   slurm_write_conf CTLD ADDR NAME=ADDR...
#                               $WORK/slurm.conf (exported as SLURM_CONF):
#                               slurmctld on host CTLD at ADDR, one compute
#                               node per NAME=ADDR (spool, pid and log files
#                               per node: %n), one partition of them all
#   slurm_daemon [-n K] CMD...  starts CMD in the background (a daemon), on
#                               node K with -n (on_node_bg), remembered by its
#                               pid for slurm_stop
#   slurm_wait_idle N           waits until N nodes are idle
#   slurm_client CMD...         a client command (sbatch, scontrol, sinfo,
#                               scancel): here, or on node $SLURM_CLIENT_NODE
#                               (on_node) when that is set
#   slurm_submit ARGS...        sbatch --parsable ARGS; the job id in SLURM_JOB
#   slurm_wait_progress LINES   until the job's run/metrics.csv has > LINES lines
#   slurm_requeue_and_check STEPS
#                               `scontrol requeue`, then: the job COMPLETED,
#                               restarted (SLURM_RESTARTS >= 1), resumed from a
#                               step 0 < SLURM_RESUMED_AT < STEPS and stopped
#                               there by the signal, checkpointed (job.out)
#   slurm_stop                  the job cancelled, then the daemons killed
#   slurm_logs                  the tails of the daemons' logs and job.out
#
# The cluster has private ports, no cgroups (proctrack/linuxproc, task/none)
# and no accounting. The job writes $WORK/job.out (appended to across
# restarts) and runs in $WORK.

SLURM_DAEMONS=()
SLURM_JOB=
SLURM_CLIENT_NODE=
SLURM_RESTARTS=
SLURM_RESUMED_AT=

slurm_skip() {
  [ -z "${CI:-}" ] || fail "$* (CI is set: this test must run there)"
  echo "skipped: $*"
  exit 77
}

slurm_require() {
  [ "$(id -u)" = 0 ] || slurm_skip "needs root to start slurmd and munged"
  local tool
  for tool in munged slurmctld slurmd sbatch srun scontrol sinfo scancel runuser; do
    command -v "$tool" > /dev/null || slurm_skip "$tool not found (scripts/install-debian-deps.sh --test installs SLURM and munge)"
  done
  [ -r /etc/munge/munge.key ] || slurm_skip "no munge key at /etc/munge/munge.key"
}

slurm_logs() {
  local f
  for f in "$WORK"/munge/munged.log "$WORK"/slurm/*.log "$WORK"/slurm/*.out "$WORK"/job.out; do
    [ -s "$f" ] && { echo "== $f"; tail -20 "$f"; }
  done
  return 0
}

slurm_client() {
  if [ -n "$SLURM_CLIENT_NODE" ]; then on_node "$SLURM_CLIENT_NODE" "$@"; else "$@"; fi
}

slurm_daemon() {
  if [ "$1" = -n ]; then
    local k=$2; shift 2
    on_node_bg "$k" "$@"
  else
    "$@" &
  fi
  SLURM_DAEMONS+=($!)
}

# munged runs as its user, who must reach $WORK and its socket there; the
# socket is a path, so processes in any network namespace reach it too.
slurm_start_munged() {
  chmod 755 "$WORK"
  mkdir -p "$WORK/munge" "$WORK/slurm/state"
  chown munge: "$WORK/munge"
  slurm_daemon "$@" runuser -u munge -- munged --foreground --socket="$WORK/munge/socket" --pid-file="$WORK/munge/pid" \
    --log-file="$WORK/munge/munged.log" --seed-file="$WORK/munge/seed" > "$WORK/munge/munged.out" 2>&1
  local _
  for _ in $(seq 50); do [ -S "$WORK/munge/socket" ] && return 0; sleep 0.1; done
  slurm_logs
  slurm_skip "munged did not start"
}

slurm_write_conf() {
  local ctld=$1 ctld_addr=$2 spec names= port=$((20000 + RANDOM % 20000))
  shift 2
  {
    cat <<EOF
ClusterName=distzotest
SlurmctldHost=$ctld($ctld_addr)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
AuthType=auth/munge
# cred_expire is also how long a requeued job waits before it may start again (default 120 s)
AuthInfo=socket=$WORK/munge/socket,cred_expire=10
CredType=cred/munge
StateSaveLocation=$WORK/slurm/state
SlurmdSpoolDir=$WORK/slurm/spool-%n
SlurmctldPidFile=$WORK/slurm/slurmctld.pid
SlurmdPidFile=$WORK/slurm/slurmd-%n.pid
SlurmctldLogFile=$WORK/slurm/slurmctld.log
SlurmdLogFile=$WORK/slurm/slurmd-%n.log
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
EOF
    for spec in "$@"; do
      echo "NodeName=${spec%%=*} NodeAddr=${spec#*=} CPUs=4 RealMemory=2000 State=UNKNOWN"
      names=${names:+$names,}${spec%%=*}
      mkdir -p "$WORK/slurm/spool-${spec%%=*}"
    done
    echo "PartitionName=test Nodes=$names Default=YES MaxTime=INFINITE State=UP"
  } > "$WORK/slurm.conf"
  export SLURM_CONF=$WORK/slurm.conf
  SLURM_PORTS="$port-$((port + 1))"
}

slurm_wait_idle() {
  local want=$1 idle= _
  for _ in $(seq 150); do
    idle=$(slurm_client sinfo -h -N -o %T 2> /dev/null | grep -c '^idle$' || true)
    [ "$idle" = "$want" ] && return 0
    sleep 0.2
  done
  slurm_logs
  slurm_skip "the cluster did not come up ($idle of $want nodes idle: $(slurm_client sinfo -h -N -o '%N %T' 2>&1 | tr '\n' ' '))"
}

slurm_submit() {
  SLURM_JOB=$(slurm_client sbatch --parsable "$@") || { slurm_logs; fail "sbatch failed"; }
}

slurm_job_field() { slurm_client scontrol show job "$SLURM_JOB" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# Deadlines in seconds, generous for slow builds (sanitizers) on 2 cores.
slurm_wait_progress() {
  local lines=$1 deadline=$((SECONDS + 300))
  until [ -s run/metrics.csv ] && [ "$(wc -l < run/metrics.csv)" -gt "$lines" ]; do
    [ "$(slurm_job_field JobState)" != FAILED ] || { slurm_logs; fail "job $SLURM_JOB failed before the requeue"; }
    [ $SECONDS -lt $deadline ] || { slurm_logs; fail "job $SLURM_JOB made no progress in 300 s"; }
    sleep 0.2
  done
}

slurm_requeue_and_check() {
  local steps=$1 state deadline=$((SECONDS + 900)) n
  slurm_client scontrol requeue "$SLURM_JOB" || { slurm_logs; fail "scontrol requeue $SLURM_JOB failed"; }
  while :; do
    state=$(slurm_job_field JobState)
    case "$state" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL) break ;; esac
    [ $SECONDS -lt $deadline ] || break
    sleep 0.5
  done
  [ "$state" = COMPLETED ] || { slurm_logs; fail "job $SLURM_JOB ended $state, expected COMPLETED"; }
  SLURM_RESTARTS=$(slurm_job_field Restarts)
  [ "${SLURM_RESTARTS:-0}" -ge 1 ] || { slurm_logs; fail "job $SLURM_JOB never restarted (Restarts=$SLURM_RESTARTS)"; }
  n=$(sed -n 's/.*resuming from .*ckpt-0*\([0-9][0-9]*\)\.h5.*/\1/p' job.out | tail -1)
  [ -n "$n" ] && [ "$n" -gt 0 ] && [ "$n" -lt "$steps" ] || { slurm_logs; fail "no resume from a step 0 < N < $steps in job.out"; }
  grep -q "stopped by a signal after step $n, checkpointed" job.out ||
    { slurm_logs; fail "the requeue did not stop distzo at a checkpoint of step $n"; }
  SLURM_RESUMED_AT=$n
}

# The job first (a failed test must not leave it running), then the daemons.
slurm_stop() {
  local pid _
  if [ -n "$SLURM_JOB" ]; then
    slurm_client scancel --full "$SLURM_JOB" 2> /dev/null || true
    sleep 1
  fi
  for pid in "${SLURM_DAEMONS[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${SLURM_DAEMONS[@]}"; do  # 10 s to stop, then SIGKILL
    for _ in $(seq 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
  done
  SLURM_JOB= SLURM_DAEMONS=()
}
