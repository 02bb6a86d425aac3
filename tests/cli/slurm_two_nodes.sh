#!/usr/bin/env bash
# SLURM on two nodes of this machine (tests/support/nodes.sh: a network, UTS
# and mount namespace per node): munged on node 0 (its socket is a path in
# $WORK, reached from every node), slurmctld on node 0 at 10.251.0.1, one
# slurmd per node under the node's own host name and address
# (tests/support/slurm_cluster.sh); every client command runs on node 0. The job script scripts/slurm/distzo.sbatch
# is submitted from node 0 over 2 nodes x 2 tasks with a P2xD2 deck (MPICH
# through srun --mpi=pmi2; between the nodes UCX's shared memory, as in
# two_nodes.sh), requeued mid-run with `scontrol requeue`. The job must run
# 2 ranks on each node (each node its own node communicator and node-shared
# θ master), restart, resume from a step N with 0 < N < steps, and end with
# the digest of the same deck run uninterrupted on 4 ranks of one node.
#
# Needs root (namespaces, slurmd, munged) and the slurm-wlm and munge
# packages (scripts/install-debian-deps.sh --test). Elsewhere it skips with a
# message (exit 77); with CI set in the environment a skip is a failure.
# Usage: slurm_two_nodes.sh DISTZO TEST_DATA SBATCH_SCRIPT [MPIEXEC]
sbatch_script=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
source "$(dirname "$0")/lib.sh" "$1" "$2" "${4:-mpiexec}"
source "$HERE/../support/slurm_cluster.sh"
source "$HERE/../support/nodes.sh"
slurm_require
make_nodes 2
n0=${NODE_NAMES[0]}
n1=${NODE_NAMES[1]}
# After make_nodes (it sets its own EXIT trap): SLURM first, then the nodes.
cleanup() {
  slurm_stop
  kill_leftovers
  nodes_cleanup
  wait 2> /dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# Every client command (sbatch, scontrol, sinfo, scancel) on node 0.
SLURM_CLIENT_NODE=0
slurm_start_munged -n 0
slurm_write_conf "$n0" 10.251.0.1 "$n0=10.251.0.1" "$n1=10.251.0.2"
# `ip netns exec` mounts a sysfs of its own: the nodes have no cgroup file
# system, where slurmd's autodetection fails ("No filesystem mounted on
# /sys/fs/cgroup"). Nothing here uses cgroups (proctrack/linuxproc,
# task/none): the v1 plugin, named, loads without one.
echo 'CgroupPlugin=cgroup/v1' > cgroup.conf
slurm_daemon -n 0 slurmctld -D -i -f "$SLURM_CONF" > slurm/slurmctld.out 2>&1
for k in 0 1; do
  slurm_daemon -n $k slurmd -D -f "$SLURM_CONF" > "slurm/slurmd-${NODE_NAMES[$k]}.out" 2>&1
done
slurm_wait_idle 2
pass "two-node cluster up: slurmctld on $n0 (10.251.0.1), slurmd on $n0 and $n1, ports $SLURM_PORTS"

# P2xD2: each node holds one data replica in its own node-shared master,
# sliced between its 2 ranks (block distribution: ranks 0,1 on node 0).
steps=300
MICRO_BATCH=8 deck job $steps run 'checkpoint:' '  interval: 0' '  resume: latest' \
  'parallel:' '  perturbation: 2' '  data: 2'
slurm_submit --nodes=2 --ntasks=4 --ntasks-per-node=2 --cpus-per-task=1 --time=30 \
  --open-mode=append --output="$WORK/job.out" --chdir="$WORK" \
  --export=ALL,PATH="$(dirname "$DISTZO"):$PATH" "$sbatch_script" job.yaml
slurm_wait_progress 80

# Where the ranks run: each rank's node (its UTS namespace) and its SLURM rank.
placement=$(for p in $(rank_pids job); do
  for k in 0 1; do
    [ "$(readlink "/proc/$p/ns/uts")" = "$(readlink "/proc/${NODE_HOLDERS[$k]}/ns/uts")" ] || continue
    echo "$(tr '\0' '\n' < "/proc/$p/environ" | sed -n 's/^SLURM_PROCID=//p') ${NODE_NAMES[$k]}"
  done
done | sort -n)
[ "$placement" = "$(printf '0 %s\n1 %s\n2 %s\n3 %s' "$n0" "$n0" "$n1" "$n1")" ] ||
  { slurm_logs; fail "ranks and nodes of job $SLURM_JOB: $(echo "$placement" | tr '\n' ' ')"; }
nodelist=$(slurm_client scontrol show hostnames "$(slurm_job_field NodeList)" | tr '\n' ' ')
[ "$nodelist" = "$n0 $n1 " ] || fail "job $SLURM_JOB runs on '$nodelist', expected $n0 $n1"
pass "job $SLURM_JOB on $n0 and $n1: ranks 0, 1 on $n0 and 2, 3 on $n1 (srun, block distribution)"

slurm_requeue_and_check $steps
n=$SLURM_RESUMED_AT
# Both runs of the job (before the requeue and after) had a node-shared master
# per node: 2 ranks in each node communicator (MPI takes SLURM's nodes).
shared=$(grep -c "shared by the node's 2 ranks (one copy per node)" run/run.log || true)
[ "$shared" -ge 2 ] || fail "run/run.log lacks the placement of 2 ranks per node in both runs: $(grep -i placement run/run.log)"
for k in 0 1; do
  launches=$(grep -c "launch task StepId=$SLURM_JOB\.0 " "slurm/slurmd-${NODE_NAMES[$k]}.log" || true)
  [ "$launches" -ge 2 ] || fail "slurmd on ${NODE_NAMES[$k]} launched step $SLURM_JOB.0 $launches time(s), expected 2 (before and after the requeue)"
done
for k in 0 1; do
  grep -q "^${STAMP}host memory of node ${NODE_NAMES[$k]} (2 ranks): " run/run.log ||
    fail "run/run.log has no host memory line of node ${NODE_NAMES[$k]}: $(grep 'host memory' run/run.log)"
done

# The same deck uninterrupted, 4 ranks on one node (this machine).
MICRO_BATCH=8 deck straight $steps straight 'checkpoint:' '  interval: 0' 'parallel:' '  perturbation: 2' '  data: 2'
"$MPIEXEC" -n 4 "$DISTZO" run straight.yaml > straight.log 2>&1 || { cat straight.log; fail "the uninterrupted run failed"; }
final=$(printf 'ckpt-%06d.h5' $steps)
[ "$(digest run/$final)" = "$(digest straight/$final)" ] ||
  fail "on 2 nodes, requeued at step $n and resumed: digest differs from the uninterrupted run on 1 node"
pass "sbatch over 2 nodes x 2 tasks (P2xD2, srun --mpi=pmi2), requeued: restarted $SLURM_RESTARTS time(s), resumed at step $n of $steps on both nodes, digest = uninterrupted run on 4 ranks of 1 node ($(digest straight/$final))"
