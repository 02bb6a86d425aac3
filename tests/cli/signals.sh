#!/usr/bin/env bash
# SIGUSR1 / SIGTERM stop a run after the current step, on every rank at the
# same step, with θ checkpointed, exit status 75 (EX_TEMPFAIL: requeue); the
# resumed run ends with the digest of a run never stopped.
source "$(dirname "$0")/lib.sh" "$@"
ckpt_step() { ls "$1" | sed -n 's/^ckpt-0*\([0-9][0-9]*\)\.h5$/\1/p' | sort -n | tail -1; }
wait_rows() { for _ in $(seq 200); do [ -s "$1" ] && [ "$(wc -l < "$1")" -gt "$2" ] && return; sleep 0.05; done; fail "no progress in $1"; }

# 1. One rank, SIGUSR1.
deck long 100000000 one 'checkpoint:' '  interval: 0'
"$DISTZO" run long.yaml > one.log 2>&1 &
pid=$!
wait_rows one/metrics.csv 3
kill -USR1 "$pid"
set +e; wait "$pid"; rc=$?; set -e
[ "$rc" = 75 ] || { cat one.log; fail "a stopped run exited $rc, expected 75"; }
n=$(ckpt_step one)
[ -n "$n" ] || fail "no checkpoint written on stop: $(ls one)"
grep -q "stopped by a signal after step $n, checkpointed" one.log || fail "stop message: $(tail -2 one.log)"
grep -q "^${STAMP}stopped by a signal after step $n, checkpointed" one/run.log || fail "run.log does not say why the run ended: $(tail -2 one/run.log)"
[ "$(grep -c '^[0-9]' one/metrics.csv)" = "$n" ] || fail "metrics.csv does not end at step $n"
target=$((n + 5))
deck resume $target one 'checkpoint:' '  resume: latest'
"$DISTZO" run resume.yaml > resume.log 2>&1 || { cat resume.log; fail "resume after a stop failed"; }
deck straight $target straight 'checkpoint:' '  interval: 0'
"$DISTZO" run straight.yaml > straight.log
[ "$(digest one/ckpt-$(printf %06d $target).h5)" = "$(digest straight/ckpt-$(printf %06d $target).h5)" ] ||
  fail "stopped at $n and resumed differs from $target steps straight"
pass "SIGUSR1: stop after step $n with a checkpoint, exit 75; resumed = straight run to $target"

# 2. Two ranks (P=2): only rank 1 is signalled (SIGTERM); both stop after the same step.
deck long2 100000000 two 'checkpoint:' '  interval: 0' 'parallel:' '  perturbation: 2'
"$MPIEXEC" -n 2 "$DISTZO" run long2.yaml > two.log 2>&1 &
launcher=$!
wait_rows two/metrics.csv 3
pids=($(rank_pids long2 | sort -n))
[ "${#pids[@]}" = 2 ] || fail "expected 2 distzo ranks, found: ${pids[*]}"
kill -TERM "${pids[-1]}"
set +e; wait "$launcher"; rc=$?; set -e
[ "$rc" = 75 ] || { cat two.log; fail "mpiexec of a stopped run exited $rc, expected 75"; }
n=$(ckpt_step two)
[ -n "$n" ] && grep -q "stopped by a signal after step $n, checkpointed" two.log ||
  fail "2-rank stop: $(tail -3 two.log); $(ls two)"
pass "SIGTERM to one rank of two: both stop after step $n, checkpointed, exit 75"
