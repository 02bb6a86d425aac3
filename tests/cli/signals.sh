#!/usr/bin/env bash
# SIGUSR1 / SIGTERM stop a run after the current step, on every rank at the
# same step, with θ checkpointed, exit status 75 (EX_TEMPFAIL: requeue); the
# resumed run ends with the digest of a run never stopped. SIGINT (Ctrl-C, to
# the run or to mpiexec) does the same with exit status 130; a second one
# stops at once, leaving the last good checkpoint and no temporary file.
source "$(dirname "$0")/lib.sh" "$@"
ckpt_step() { ls "$1" | sed -n 's/^ckpt-0*\([0-9][0-9]*\)\.h5$/\1/p' | sort -n | tail -1; }
wait_rows() { for _ in $(seq 200); do [ -s "$1" ] && [ "$(wc -l < "$1")" -gt "$2" ] && return; sleep 0.05; done; fail "no progress in $1"; }
# state PID: its state letter (R, S, Z...), empty once it is gone.
state() { sed 's/.*) //; s/ .*//' "/proc/$1/stat" 2> /dev/null || true; }
# ended PID: waits for PID (a child) to end, 60 s at most; its exit status in $rc.
ended() {
  for _ in $(seq 1200); do case "$(state "$1")" in "" | Z) break ;; esac; sleep 0.05; done
  case "$(state "$1")" in "" | Z) ;; *) kill -KILL "$1"; fail "process $1 did not end within 60 s of the signal" ;; esac
  set +e; wait "$1"; rc=$?; set -e
}
# acknowledged LOG: until the run says (rank 0's handler) that it got the
# first signal: a second one sent before could merge with it.
acknowledged() { for _ in $(seq 400); do grep -q "interrupted: stopping after the current step" "$1" && return; sleep 0.02; done; fail "the first SIGINT was not acknowledged: $(tail -3 "$1")"; }
temporaries() { ls "$1" | grep '\.tmp\.' || true; }
# wait_temporary DIR: until a checkpoint is being written in DIR.
wait_temporary() { for _ in $(seq 400); do [ -z "$(temporaries "$1")" ] || return 0; sleep 0.02; done; fail "no temporary checkpoint appeared in $1: $(ls "$1")"; }
# straight STEPS: STEPS steps never stopped, their final digest in straightSTEPS.digest (run once).
straight() {
  if [ ! -s "straight$1.digest" ]; then
    deck "straight$1" "$1" "straight$1" 'checkpoint:' '  interval: 0'
    "$DISTZO" run "straight$1.yaml" > "straight$1.log" 2>&1 || { cat "straight$1.log"; fail "straight run to $1 failed"; }
    digest "straight$1/ckpt-$(printf %06d "$1").h5" > "straight$1.digest"
  fi
}
# resumes DIR TARGET FROM: a run (one rank) of TARGET steps into DIR with
# `resume: latest` resumes from ckpt-FROM and ends on the straight run's digest.
resumes() {
  local dir=$1 target=$2 from=$3
  deck "$dir-resume" "$target" "$dir" 'checkpoint:' '  resume: latest'
  "$DISTZO" run "$dir-resume.yaml" > "$dir-resume.log" 2>&1 || { cat "$dir-resume.log"; fail "$dir: resume failed"; }
  grep -q "resuming from $dir/ckpt-$(printf %06d "$from").h5" "$dir-resume.log" ||
    fail "$dir: did not resume from step $from: $(head -3 "$dir-resume.log")"
  straight "$target"
  [ "$(digest "$dir/ckpt-$(printf %06d "$target").h5")" = "$(cat "straight$target.digest")" ] ||
    fail "$dir: stopped at $from and resumed differs from $target steps straight"
}

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
resumes one $target "$n"
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

# 3. One rank, SIGINT (Ctrl-C): the same stop after the step, but exit 130
# (not the requeue status), the lock removed, and said so at once.
deck int 100000000 int 'checkpoint:' '  interval: 0'
# A background command of this non-interactive shell starts with SIGINT
# ignored; a terminal's foreground command, as here, with the default.
env --default-signal=INT "$DISTZO" run int.yaml > int.log 2>&1 &
pid=$!
wait_rows int/metrics.csv 3
kill -INT "$pid"
ended "$pid"
n=$(ckpt_step int)
[ -n "$n" ] || { cat int.log; fail "SIGINT: no checkpoint written (exit $rc): $(ls int)"; }
[ "$rc" = 130 ] || { cat int.log; fail "SIGINT: exit $rc, expected 130"; }
acknowledged int.log
grep -q "stopped by an interrupt (SIGINT) after step $n, checkpointed; resume (checkpoint.resume: latest) to continue" int.log ||
  fail "SIGINT stop message: $(tail -2 int.log)"
[ ! -e int/LOCK ] || fail "SIGINT left output.dir locked"
[ "$(grep -c '^[0-9]' int/metrics.csv)" = "$n" ] || fail "SIGINT: metrics.csv does not end at step $n"
resumes int $((n + 5)) "$n"
pass "SIGINT: stop after step $n with a checkpoint, exit 130, no LOCK; resumed = straight run to $((n + 5))"

# 4. Two ranks, SIGINT to mpiexec (a terminal's Ctrl-C reaches the ranks only
# through it: hydra starts each in a session of its own, and forwards the
# first SIGINT to every rank): both stop after the same step, exit 130.
deck int2 100000000 int2 'checkpoint:' '  interval: 0' 'parallel:' '  perturbation: 2'
"$MPIEXEC" -n 2 "$DISTZO" run int2.yaml > int2.log 2>&1 &
launcher=$!
wait_rows int2/metrics.csv 3
[ "$(rank_pids int2 | wc -l)" = 2 ] || fail "expected 2 distzo ranks, found: $(rank_pids int2)"
kill -INT "$launcher"
ended "$launcher"
n=$(ckpt_step int2)
[ -n "$n" ] && grep -q "stopped by an interrupt (SIGINT) after step $n, checkpointed" int2.log ||
  { cat int2.log; fail "2 ranks, SIGINT to mpiexec (exit $rc): no stop with a checkpoint: $(ls int2)"; }
[ "$rc" = 130 ] || { cat int2.log; fail "2 ranks, SIGINT to mpiexec: mpiexec exited $rc, expected 130"; }
[ ! -e int2/LOCK ] || fail "2 ranks, SIGINT: output.dir left locked"
resumes int2 $((n + 5)) "$n"
pass "SIGINT to mpiexec: both ranks stop after step $n, checkpointed, mpiexec exits 130; resumed = straight run"

# 5. One rank, a second SIGINT while a checkpoint is being written
# (each tensor written 40 ms late): the run ends at once, exit 130, without
# the temporary file or the lock; the newest whole checkpoint (interval 2)
# stays, and a resume continues from it.
deck twice 100000000 twice 'checkpoint:' '  interval: 2'
env --default-signal=INT "$DISTZO" run twice.yaml --debug-slow-checkpoint-ms=40 > twice.log 2>&1 &
pid=$!
wait_rows twice/metrics.csv 3
kill -INT "$pid"
acknowledged twice.log
wait_temporary twice
kill -INT "$pid"
ended "$pid"
[ "$rc" = 130 ] || { cat twice.log; fail "second SIGINT: exit $rc, expected 130"; }
grep -q "a second signal: stopping at once" twice.log || fail "second SIGINT: $(tail -2 twice.log)"
[ -z "$(temporaries twice)" ] || fail "second SIGINT left a temporary checkpoint: $(temporaries twice)"
[ ! -e twice/LOCK ] || fail "second SIGINT left output.dir locked"
n=$(ckpt_step twice)
[ -n "$n" ] || fail "second SIGINT: no checkpoint left: $(ls twice)"
resumes twice $((n + 5)) "$n"
pass "second SIGINT: ends at once, exit 130, no temporary file, no lock; resumed from step $n = straight run"

# 6. Two ranks, SIGINT twice to mpiexec: hydra does not forward the second but
# kills the ranks (SIGKILL) and exits 255, which leaves the lock and the
# temporary checkpoint behind: the next run takes the lock over, removes the
# temporary file and resumes from the newest whole checkpoint.
deck twice2 100000000 twice2 'checkpoint:' '  interval: 2' 'parallel:' '  perturbation: 2'
"$MPIEXEC" -n 2 "$DISTZO" run twice2.yaml --debug-slow-checkpoint-ms=40 > twice2.log 2>&1 &
launcher=$!
wait_rows twice2/metrics.csv 3
kill -INT "$launcher"
acknowledged twice2.log
wait_temporary twice2
kill -INT "$launcher"
ended "$launcher"
[ "$rc" != 0 ] || { cat twice2.log; fail "SIGINT twice to mpiexec: it exited 0"; }
for _ in $(seq 100); do [ -z "$(rank_pids twice2)" ] && break; sleep 0.05; done
[ -z "$(rank_pids twice2)" ] || fail "SIGINT twice to mpiexec: ranks still run: $(rank_pids twice2)"
left=$(temporaries twice2)
locked=$([ -e twice2/LOCK ] && echo yes || echo no)
n=$(ckpt_step twice2)
[ -n "$n" ] || fail "SIGINT twice to mpiexec: no checkpoint left: $(ls twice2)"
resumes twice2 $((n + 5)) "$n"
[ "$locked" = no ] || grep -q "output.dir: took over the lock of process [0-9]*, which has ended" twice2-resume.log ||
  fail "the resume did not say it took over the dead run's lock: $(head -5 twice2-resume.log)"
[ -z "$left" ] || grep -q "output.dir: removed 1 temporary checkpoint file left by an interrupted write" twice2-resume.log ||
  fail "the resume did not say it removed $left: $(head -5 twice2-resume.log)"
[ -z "$(temporaries twice2)" ] || fail "a temporary checkpoint outlived the resume: $(temporaries twice2)"
pass "SIGINT twice to mpiexec: exit $rc; lock left: $locked, temporary left: ${left:-none}; the next run took over and resumed from step $n = straight run"
