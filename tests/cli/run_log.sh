#!/usr/bin/env bash
# run.log: every line starts with the UTC time it was written (ISO 8601,
# milliseconds); long phases (an evaluation, loading θ, writing a checkpoint)
# print progress lines, at most one per DISTZO_PROGRESS_INTERVAL seconds
# (0 here: every update, so nothing depends on how long anything takes),
# on stdout without the time; on two ranks only rank 0 prints them.
source "$(dirname "$0")/lib.sh" "$@"

# every_line_stamped FILE: each line starts with a UTC time; the times never go back.
every_line_stamped() {
  [ -s "$1" ] || fail "$1 is empty"
  if grep -Evq "$STAMP_EXACT" "$1"; then fail "$1 has lines without a UTC time: $(grep -Ev "$STAMP_EXACT" "$1" | head -3)"; fi
  cut -d' ' -f1 "$1" | sort -c 2> /dev/null || fail "$1: the times go back: $(cut -d' ' -f1 "$1")"
}

# 1. One rank, a progress line at every update.
deck one 4 one
DISTZO_PROGRESS_INTERVAL=0 "$DISTZO" run one.yaml > one.log 2>&1 || { cat one.log; fail "run failed"; }
every_line_stamped one/run.log
# 64 examples in micro-batches of 16: 4 batches, before and after training.
for when in start end; do
  for b in 1 2 3 4; do
    grep -q "^${STAMP}evaluating ($when) step [04]: $((16 * b))/64 examples (batch $b/4), [0-9.]* examples/s, ETA [0-9:]*\$" one/run.log ||
      fail "run.log lacks the $when evaluation's batch $b: $(grep evaluating one/run.log)"
  done
  grep -q "^evaluating ($when) step [04]: 64/64 examples (batch 4/4)" one.log || fail "stdout lacks the $when evaluation's progress: $(cat one.log)"
done
grep -q "^${STAMP}loading θ from .*model.h5: .* (100 %), .*/s, ETA 00:00:00\$" one/run.log ||
  fail "run.log lacks loading θ: $(head -3 one/run.log)"
# Loading comes before run.log opens: its lines come first, with their times.
head -1 one/run.log | grep -q "^${STAMP}loading θ from .*model.h5: " || fail "loading θ is not run.log's first line: $(head -2 one/run.log)"
grep -q "^${STAMP}writing checkpoint one/ckpt-000004.h5: .* (100 %)" one/run.log ||
  fail "run.log lacks the checkpoint's progress: $(grep checkpoint one/run.log)"
grep -q "^${STAMP}done: 4 steps" one/run.log || fail "no done line: $(tail -3 one/run.log)"
pass "every run.log line has a UTC time; evaluation, loading and checkpoint progress on stdout and in run.log"

# 2. The default rate: a run this small prints no progress lines (a limit of
#    1000 s stands for 10 s without depending on the machine's speed); the
#    digest is the same as with every progress line printed.
deck quiet 4 quiet
DISTZO_PROGRESS_INTERVAL=1000 "$DISTZO" run quiet.yaml > quiet.log 2>&1 || { cat quiet.log; fail "run failed"; }
every_line_stamped quiet/run.log
if grep -q "evaluating\|loading θ\|writing checkpoint" quiet/run.log quiet.log; then
  fail "progress lines within the interval: $(grep 'evaluating\|loading\|writing' quiet/run.log)"
fi
[ "$(digest one/ckpt-000004.h5)" = "$(digest quiet/ckpt-000004.h5)" ] || fail "progress lines changed the digest"
pass "within the interval no progress line; the digest does not depend on them"

# 3. A knob that is not a number is refused, naming it.
set +e; DISTZO_PROGRESS_INTERVAL=soon "$DISTZO" run quiet.yaml > bad.log 2>&1; rc=$?; set -e
[ "$rc" != 0 ] && grep -q "DISTZO_PROGRESS_INTERVAL: expected the seconds" bad.log || fail "DISTZO_PROGRESS_INTERVAL=soon: exit $rc, $(cat bad.log)"
pass "DISTZO_PROGRESS_INTERVAL=soon refused"

# 4. Two ranks (P=2): rank 0 alone prints, at its position (batches 0 and 2
#    are its own: 2/4 and 4/4 done); the watchdog's and the run's lines alike are stamped.
deck two 4 two 'parallel:' '  perturbation: 2'
DISTZO_PROGRESS_INTERVAL=0 "$MPIEXEC" -n 2 "$DISTZO" run two.yaml > two.log 2>&1 || { cat two.log; fail "2-rank run failed"; }
every_line_stamped two/run.log
[ "$(grep -c '^evaluating (start) step 0: ' two.log)" = 2 ] ||
  fail "expected rank 0's two progress lines of the first evaluation: $(grep evaluating two.log)"
grep -q "^evaluating (start) step 0: 32/64 examples (batch 2/4)" two.log &&
  grep -q "^evaluating (start) step 0: 64/64 examples (batch 4/4)" two.log || fail "2 ranks: $(grep evaluating two.log)"
[ "$(digest one/ckpt-000004.h5)" = "$(digest two/ckpt-000004.h5)" ] || fail "P=2 differs from one rank"
pass "2 ranks: rank 0's progress lines only, run.log stamped"
