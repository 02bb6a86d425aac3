#!/usr/bin/env bash
# output.dir belongs to one run at a time (app/run_directory.hpp): a second
# run into a locked directory stops; a dead process's lock, or this SLURM
# job's own after a requeue, is taken over; leftover temporary checkpoints
# are removed; rotation deletes only this run's checkpoints, and
# `resume: latest` picks this run's newest that reads back whole.
source "$(dirname "$0")/lib.sh" "$@"

# 1. A run holds the lock; a second one into the same directory stops.
deck long 100000000 shared 'checkpoint:' '  interval: 0'
"$DISTZO" run long.yaml > long.log 2>&1 &
long_pid=$!
for _ in $(seq 100); do [ -e shared/LOCK ] && break; sleep 0.1; done
[ -e shared/LOCK ] || fail "the running run did not lock shared/"
deck second 10 shared
if "$DISTZO" run second.yaml > second.log 2>&1; then fail "a second run wrote into a locked output.dir"; fi
grep -q "output.dir 'shared' is in use by another run (process $long_pid on $(hostname)" second.log ||
  fail "lock message: $(cat second.log)"
pass "a second run into a locked output.dir stops, naming the process and host"

# 2. The holder dies (kill -9: its lock stays, with a temporary checkpoint
#    as if it died writing): the next run takes both over.
kill -9 "$long_pid"; wait "$long_pid" 2>/dev/null || true
touch shared/ckpt-000005.h5.tmp.$long_pid
deck third 10 shared
"$DISTZO" run third.yaml > third.log 2>&1 || { cat third.log; fail "the run after a dead one failed"; }
grep -q "took over the lock of process $long_pid, which has ended" shared/run.log || fail "takeover note: $(head -3 shared/run.log)"
grep -q "removed 1 temporary checkpoint file left by an interrupted write" shared/run.log || fail "tmp note missing"
[ ! -e shared/ckpt-000005.h5.tmp.$long_pid ] || fail "the temporary checkpoint is still there"
[ ! -e shared/LOCK ] || fail "the lock outlived the run"
pass "a dead run's lock and temporary checkpoint are taken over and removed, with notes; the lock goes with the run"

# 3. SLURM: a requeued job takes over its own lock, even from another host;
#    another job's lock on another host is respected.
printf 'host elsewhere pid 1 job 4242\n' > shared/LOCK
SLURM_JOB_ID=4242 "$DISTZO" run third.yaml > requeue.log 2>&1 || { cat requeue.log; fail "a requeued job could not take its lock over"; }
grep -q "took over the lock of this SLURM job (4242), requeued (was on elsewhere)" shared/run.log || fail "requeue note"
printf 'host elsewhere pid 1 job 4242\n' > shared/LOCK
if SLURM_JOB_ID=777 "$DISTZO" run third.yaml > other_job.log 2>&1; then fail "another job's lock was taken"; fi
rm shared/LOCK
pass "a requeued SLURM job takes over its own lock; another job's is respected"

# 3b. A lock that names no run (empty, or garbage) is refused with what to do;
#     an output.dir under a regular file says why it cannot be made.
for content in '' 'garbage\n'; do
  printf "$content" > shared/LOCK
  if "$DISTZO" run third.yaml > bad_lock.log 2>&1; then fail "a lock naming no run was taken over"; fi
  grep -qF "output.dir 'shared' has a lock that names no run (shared/LOCK does not hold \"host H pid P job J\")" bad_lock.log &&
    grep -qF "or remove shared/LOCK if no run uses this directory" bad_lock.log || fail "bad lock: $(cat bad_lock.log)"
done
rm shared/LOCK
touch plain_file
sed 's|dir: shared|dir: plain_file/out|' third.yaml > under_file.yaml
if "$DISTZO" run under_file.yaml > under_file.log 2>&1; then fail "an output.dir under a regular file was accepted"; fi
grep -qF "'plain_file' exists and is not a directory" under_file.log || fail "output.dir under a file: $(cat under_file.log)"
pass "a lock naming no run is refused saying what to do; an output.dir under a regular file says which part is not a directory"

# 4. Two runs, one directory, one after the other: the second run's rotation
#    leaves the first run's checkpoints alone, and resume picks its own.
deck first_run 40 mixed 'checkpoint:' '  interval: 5'
"$DISTZO" run first_run.yaml > first_run.log
deck second_run 20 mixed 'checkpoint:' '  interval: 10'
sed -i 's/  queries: 1/  queries: 1\n  seed: 7/' second_run.yaml
"$DISTZO" run second_run.yaml > second_run.log
[ "$(ls mixed/ckpt-*.h5 | xargs -n1 basename | tr '\n' ' ')" = "ckpt-000010.h5 ckpt-000020.h5 ckpt-000035.h5 ckpt-000040.h5 " ] ||
  fail "checkpoints after two runs: $(ls mixed)"
deck second_resume 30 mixed 'checkpoint:' '  interval: 10' '  resume: latest'
sed -i 's/  queries: 1/  queries: 1\n  seed: 7/' second_resume.yaml
"$DISTZO" run second_resume.yaml > second_resume.log 2>&1 || { cat second_resume.log; fail "resume failed"; }
grep -q "resuming from mixed/ckpt-000020.h5" second_resume.log || fail "resumed from: $(head -1 second_resume.log)"
pass "rotation deletes only the run's own checkpoints; resume: latest picks the run's own newest"

# 4b. Nothing of the earlier runs is overwritten: the second run moved the
#     first run's logs aside, and a third run writing step 40 (where the
#     first run has a checkpoint) moves that checkpoint aside, intact.
first_id=$(sed -n 's/^run id \([0-9a-f]*\) (new)$/\1/p' first_run.log)
[ -n "$first_id" ] || fail "no run id in first_run.log: $(head -3 first_run.log)"
[ -s "mixed/metrics.run-$first_id.csv" ] && [ -s "mixed/run.run-$first_id.log" ] &&
  [ -s "mixed/deck.resolved.run-$first_id.yaml" ] ||
  fail "the first run's logs were not kept: $(ls mixed)"
[ "$(tail -1 "mixed/metrics.run-$first_id.csv" | cut -d, -f1)" = 40 ] || fail "the first run's metrics were cut"
before=$(digest mixed/ckpt-000040.h5)
deck third_run 40 mixed 'checkpoint:' '  interval: 40'
sed -i 's/  queries: 1/  queries: 1\n  seed: 9/' third_run.yaml
"$DISTZO" run third_run.yaml > third_run.log 2>&1 || { cat third_run.log; fail "third run failed"; }
[ "$(digest "mixed/ckpt-000040.run-$first_id.h5")" = "$before" ] ||
  fail "the first run's step-40 checkpoint was not kept: $(ls mixed)"
[ "$(digest mixed/ckpt-000040.h5)" != "$before" ] || fail "the third run did not write its own step 40"
grep -q "the metrics.csv of run .* is kept as mixed/metrics.run-" mixed/run.log || fail "no note: $(head -5 mixed/run.log)"
grep -qF "the checkpoint of step 40 of the directory's previous run is kept as mixed/ckpt-000040.run-$first_id.h5" mixed/run.log ||
  fail "no note of the checkpoint moved aside: $(grep output.dir mixed/run.log)"
pass "a run into another run's directory keeps that run's logs and same-step checkpoints under .run-<id> names"

# 5. The newest checkpoint is truncated: resume warns and takes the one before.
deck trunc 20 trunc 'checkpoint:' '  interval: 10'
"$DISTZO" run trunc.yaml > trunc.log
truncate -s 5000 trunc/ckpt-000020.h5
deck trunc_resume 30 trunc 'checkpoint:' '  interval: 10' '  resume: latest'
"$DISTZO" run trunc_resume.yaml > trunc_resume.log 2>&1 || { cat trunc_resume.log; fail "resume past a truncated checkpoint failed"; }
grep -q "warning: passed over checkpoint trunc/ckpt-000020.h5" trunc_resume.log || fail "no warning: $(head -3 trunc_resume.log)"
grep -q "resuming from trunc/ckpt-000010.h5" trunc_resume.log || fail "resumed from: $(head -1 trunc_resume.log)"
pass "a truncated newest checkpoint is passed over with a warning; the run resumes from the one before"

# 5b. Bytes flipped inside a dataset (a tensor of θ, the seed log): its
#     checksum names it; resume: latest passes the file over, a resume that
#     names it is refused, and the run from the one before ends bit-exact.
# flip FILE DATASET: changes one byte of the dataset's data in place.
flip() {
  local offset
  offset=$(h5dump -p -H -d "$2" "$1" | sed -n 's/^ *OFFSET \([0-9]*\)$/\1/p')
  [ -n "$offset" ] || fail "no offset of $2 in $1"
  printf '\x5a' | dd of="$1" bs=1 seek=$((offset + 5)) conv=notrunc status=none
}
deck flipped 20 flipped 'checkpoint:' '  interval: 10'
"$DISTZO" run flipped.yaml > flipped.log
tensor=model.decoder.layers.0.fc1.weight
flip flipped/ckpt-000020.h5 "/$tensor"
deck flipped_named 30 flipped 'checkpoint:' '  interval: 10' '  resume: flipped/ckpt-000020.h5'
if "$DISTZO" run flipped_named.yaml > flipped_named.log 2>&1; then fail "a checkpoint with flipped bytes was resumed"; fi
grep -q "checkpoint.resume: the checkpoint flipped/ckpt-000020.h5 does not read back whole (flipped/ckpt-000020.h5: dataset '$tensor' does not match its checksum" flipped_named.log ||
  fail "flipped-bytes message: $(cat flipped_named.log)"
deck flipped_latest 30 flipped 'checkpoint:' '  interval: 10' '  resume: latest'
"$DISTZO" run flipped_latest.yaml > flipped_latest.log 2>&1 || { cat flipped_latest.log; fail "resume past a corrupt checkpoint failed"; }
grep -q "warning: passed over checkpoint flipped/ckpt-000020.h5: .*dataset '$tensor' does not match its checksum" flipped_latest.log ||
  fail "no checksum warning: $(head -4 flipped_latest.log)"
grep -q "resuming from flipped/ckpt-000010.h5" flipped_latest.log || fail "resumed from: $(head -1 flipped_latest.log)"
deck straight30 30 straight30 'checkpoint:' '  interval: 0'
"$DISTZO" run straight30.yaml > straight30.log
[ "$(digest flipped/ckpt-000030.h5)" = "$(digest straight30/ckpt-000030.h5)" ] ||
  fail "resumed past a corrupt checkpoint: digest differs from a straight run"
flip flipped/ckpt-000030.h5 /distzo/seed_log/loss
sed -i 's#resume: flipped/ckpt-000020.h5#resume: flipped/ckpt-000030.h5#; s/steps: 30/steps: 40/' flipped_named.yaml
if "$DISTZO" run flipped_named.yaml > seedlog.log 2>&1; then fail "a checkpoint with a flipped seed log was resumed"; fi
grep -q "dataset 'distzo/seed_log/loss' does not match its checksum" seedlog.log || fail "seed log message: $(cat seedlog.log)"
pass "flipped bytes in a tensor or the seed log: named by the checksum; latest passes over, a named one is refused; resumed run bit-exact"

# 6. Every checkpoint of the run is broken: resume stops rather than start
#    over on top of them.
n=$(ls trunc/ckpt-*.h5 | wc -l)
for f in trunc/ckpt-*.h5; do truncate -s 5000 "$f"; done
if "$DISTZO" run trunc_resume.yaml > all_broken.log 2>&1; then fail "a resume with only broken checkpoints went on"; fi
grep -q "none of the $n checkpoints of this run in 'trunc' reads back whole" all_broken.log ||
  fail "all-broken message: $(cat all_broken.log)"
pass "when every checkpoint of the run is broken, resume stops instead of starting over"

# 7. optim.steps below the checkpoint is an error; equal to it, nothing to do.
deck done_run 20 done 'checkpoint:' '  interval: 10'
"$DISTZO" run done_run.yaml > done1.log
rows=$(wc -l < done/eval.csv)
deck done_again 20 done 'checkpoint:' '  resume: latest'
"$DISTZO" run done_again.yaml > done2.log 2>&1 || { cat done2.log; fail "re-running a finished run failed"; }
grep -q "is already at optim.steps = 20: nothing to do" done2.log || fail "finished-run message: $(cat done2.log)"
[ "$(wc -l < done/eval.csv)" = "$rows" ] || fail "a finished run started again wrote eval rows"
deck done_less 10 done 'checkpoint:' '  resume: latest'
if "$DISTZO" run done_less.yaml > done3.log 2>&1; then fail "optim.steps below the checkpoint was accepted"; fi
grep -q "is at step 20, beyond optim.steps = 10: there is nothing to continue" done3.log || fail "steps message: $(cat done3.log)"
pass "a finished run started again does nothing; optim.steps below its checkpoint is refused"
