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

source "$HERE/../support/slurm_cluster.sh"
slurm_require

host=$(hostname -s)
cleanup() {
  slurm_stop
  kill_leftovers
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
slurm_start_munged
slurm_write_conf "$host" 127.0.0.1 "$host=127.0.0.1"
slurm_daemon slurmctld -D -i -f "$SLURM_CONF" > slurm/slurmctld.out 2>&1
slurm_daemon slurmd -D -f "$SLURM_CONF" > slurm/slurmd.out 2>&1
slurm_wait_idle 1
pass "one-node cluster up: munged, slurmctld and slurmd on ports $SLURM_PORTS"

# The deck: long enough to be requeued mid-run, resuming from the latest checkpoint.
steps=4000
deck job $steps run 'checkpoint:' '  interval: 0' '  resume: latest' 'parallel:' '  perturbation: 2'
slurm_submit --nodes=1 --ntasks=2 --ntasks-per-node=2 --cpus-per-task=1 --time=30 \
  --open-mode=append --output="$WORK/job.out" --chdir="$WORK" \
  --export=ALL,PATH="$(dirname "$DISTZO"):$PATH" "$sbatch_script" job.yaml
slurm_wait_progress 500
slurm_requeue_and_check $steps
n=$SLURM_RESUMED_AT restarts=$SLURM_RESTARTS

deck straight $steps straight 'checkpoint:' '  interval: 0'
"$DISTZO" run straight.yaml > straight.log 2>&1 || { cat straight.log; fail "the uninterrupted run failed"; }
final=$(printf 'ckpt-%06d.h5' $steps)
[ "$(digest run/$final)" = "$(digest straight/$final)" ] ||
  fail "requeued at step $n and resumed: digest differs from the uninterrupted run"
pass "sbatch over 2 tasks (srun --mpi=pmi2), requeued: restarted $restarts time(s), resumed at step $n of $steps, digest = uninterrupted run"
