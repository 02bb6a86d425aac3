#!/usr/bin/env bash
# A stopped (SIGSTOP) rank must not hang the job: past parallel.watchdog
# seconds without progress the job is aborted with exit status 76, and the
# message names the rank that stopped reporting (rank 0 names it; when
# rank 0 is the one stopped, another rank says so after a grace period).
# The signal may land while rank 1 is inside a collective it has begun like
# rank 0: there the message still names it, as stopped (from /proc).
source "$(dirname "$0")/lib.sh" "$@"
wait_rows() { for _ in $(seq 200); do [ -s "$1" ] && [ "$(wc -l < "$1")" -gt "$2" ] && return; sleep 0.05; done; fail "no progress in $1"; }

# stop_rank RANK NAME: a 2-rank run (P=2) with a 2 s watchdog; SIGSTOP that rank mid-run.
stop_rank() {
  local rank=$1 name=$2
  deck "$name" 100000000 "$name" 'checkpoint:' '  interval: 0' 'parallel:' '  perturbation: 2' \
    '  watchdog: 2'
  "$MPIEXEC" -n 2 "$DISTZO" run "$name.yaml" > "$name.log" 2>&1 &
  local launcher=$!
  wait_rows "$name/metrics.csv" 3
  # The rank's process: a distzo (not mpiexec) whose environment says PMI_RANK.
  local pids=() target=
  for p in $(rank_pids "$name"); do
    pids+=("$p")
    tr '\0' '\n' < /proc/$p/environ | grep -qx "PMI_RANK=$rank" && target=$p
  done
  [ "${#pids[@]}" = 2 ] && [ -n "$target" ] || fail "expected 2 ranks and rank $rank among them: ${pids[*]}"
  stopped_pid=$target
  kill -STOP "$target"
  local start=$SECONDS
  set +e; wait "$launcher"; rc=$?; set -e
  kill -KILL "${pids[@]}" 2>/dev/null || true
  [ "$rc" = 76 ] || { cat "$name.log"; fail "a job with rank $rank stopped exited $rc, expected 76"; }
  [ $((SECONDS - start)) -lt 60 ] || fail "the watchdog took $((SECONDS - start)) s for a 2 s deadline"
}

stop_rank 1 one
# Rank 0 names rank 1 as stopped (its process, as /proc shows it on this
# host) and, unless the signal caught rank 1 inside a collective it had
# already begun (then every rank's count is the same), as not reported.
grep -q "watchdog: rank 0 (host .*) has made no progress for .* (parallel.watchdog: 2.0 s); its last progress: .*\. .*Stopped (SIGSTOP or a debugger; /proc on host .* says so): rank 1 (host .*, pid $stopped_pid)\." one.log ||
  { cat one.log; fail "rank 0's watchdog message does not name rank 1 as stopped"; }
if grep -q "Not reported" one.log; then
  grep -q "Not reported: rank 1 (host .*, pid $stopped_pid), last seen at the start of collective [0-9]* after the .*step [0-9]*" one.log ||
    { cat one.log; fail "rank 0's watchdog message names another rank than 1 as not reported"; }
fi
grep -q "^${STAMP}error: watchdog: rank 0 .* Stopped .*: rank 1 " one/run.log || fail "run.log does not say why the run ended: $(tail -2 one/run.log)"
pass "rank 1 stopped: rank 0 names it ($(grep -o "Not reported: rank 1" one.log || echo "stopped inside a collective"); stopped) and aborts the job with 76 (stderr and run.log)"

stop_rank 0 zero
grep -q "watchdog: rank 1 (host .*) has made no progress .* Rank 0 did not end the job within the grace period: rank 0 itself is likely stopped or hung\. Stopped (SIGSTOP or a debugger; /proc on host .* says so): rank 0 (host .*, pid $stopped_pid)\." zero.log ||
  { cat zero.log; fail "rank 1's watchdog message does not point at rank 0"; }
pass "rank 0 stopped: rank 1 aborts the job with 76 after the grace period, pointing at rank 0"

# A stopped process that is continued is not a hung one (Ctrl-Z and fg,
# scontrol suspend/resume): stopped for three times the deadline, the run
# goes on, and ends only when asked to (SIGTERM: 75, not the watchdog's 76).
deck suspended 100000000 suspended 'checkpoint:' '  interval: 0' 'parallel:' '  watchdog: 2'
"$DISTZO" run suspended.yaml > suspended.log 2>&1 &
run=$!
wait_rows suspended/metrics.csv 3
kill -STOP "$run"
sleep 6
kill -CONT "$run"
rows=$(wc -l < suspended/metrics.csv)
sleep 3  # longer than the deadline: a watchdog that counted the stop fires in here
kill -TERM "$run" 2> /dev/null || true
set +e; wait "$run"; rc=$?; set -e
[ "$rc" = 75 ] || { cat suspended.log; fail "a run stopped for 6 s (watchdog 2 s) and continued exited $rc, expected 75 on SIGTERM"; }
[ "$(wc -l < suspended/metrics.csv)" -gt "$rows" ] || fail "the continued run made no progress"
pass "a run stopped (SIGSTOP) for 6 s with a 2 s watchdog and continued goes on (then SIGTERM: 75)"

# Off: the key reads back, and no watchdog thread watches (the run still finishes).
deck off 3 off 'parallel:' '  watchdog: off'
"$DISTZO" run off.yaml > off.log 2>&1 || { cat off.log; fail "a run with the watchdog off failed"; }
grep -q "watchdog: off" off/deck.resolved.yaml || fail "deck.resolved.yaml lacks watchdog: off"
pass "parallel.watchdog: off runs and is written back"

# A rank that hangs inside a library call while an exit handler waits for it
# forever (OpenBLAS's joins its threads, one of them stuck): the watchdog's
# abort must still end the process, alone and with another rank, promptly.
hang_with_stuck_exit() {
  local name=$1 ranks=$2; shift 2
  deck "$name" 100000000 "$name" 'checkpoint:' '  interval: 0' 'parallel:' '  watchdog: 2' "$@"
  local start=$SECONDS
  set +e
  timeout -s KILL 60 "$MPIEXEC" -n "$ranks" "$DISTZO" run "$name.yaml" --debug-hang-after-step=3 \
    > "$name.log" 2>&1
  rc=$?
  set -e
  [ "$rc" = 76 ] || { cat "$name.log"; fail "$name: exited $rc (137: hung until killed), expected 76"; }
  [ $((SECONDS - start)) -lt 30 ] || fail "$name: the watchdog's abort took $((SECONDS - start)) s"
  grep -q "watchdog: rank 0 .* has made no progress" "$name.log" || { cat "$name.log"; fail "$name: no watchdog message"; }
}
hang_with_stuck_exit stuck1 1
hang_with_stuck_exit stuck2 2 '  perturbation: 2'
pass "a rank hung with an exit handler that never returns: the watchdog ends the job with 76 (1 and 2 ranks)"
