#!/usr/bin/env bash
# Log-only checkpoints (checkpoint.log_interval: log-STEP.h5, the training
# state and seed log without θ): writing them changes no digest; a run killed
# (or whose final checkpoint is gone) resumes from the newest one with
# `resume: latest`, θ rebuilt from the run's base model or from a full
# checkpoint plus the logged steps, and ends with the digest and metrics.csv
# (columns 1-7) of a straight run — spsa and one_sided (N = 3), fp32 and
# bf16 + stochastic rounding, with a momentum, 1 rank and P = 2 x D = 2, resumed at another
# OPENBLAS_NUM_THREADS; an explicit `resume: DIR/log-STEP.h5`; inspect and
# replay of a log file; its size. Refusals: another base model (and a missing
# one), a log whose digest the replay does not reach, a change of storage, a
# damaged log (named: refused; latest: passed over), another run's log.
source "$(dirname "$0")/lib.sh" "$@"
STEPS=8
BASE=$TEST_DATA/../../inputs/demo/model.h5
BF16_SR=('precision:' '  storage: bf16' '  rounding: stochastic')

# setup NAME P D QUERIES ESTIMATOR [extra lines]: the demo deck NAME.yaml
# (output.dir NAME) with the estimator and weight decay 0.01.
setup() {
  local name=$1 p=$2 d=$3 q=$4 estimator=$5
  shift 5
  QUERIES=$q demo_deck "$name" "$STEPS" "$p" "$d" "$@"
  sed -i "s|^optim:\$|optim:\\n  estimator: $estimator\\n  weight_decay: 0.01|" "$name.yaml"
}
# launch NAME RANKS THREADS: runs NAME.yaml to its end.
launch() {
  local name=$1 ranks=$2 threads=$3 l=()
  [ "$ranks" -gt 1 ] && l=("$MPIEXEC" -n "$ranks")
  OPENBLAS_NUM_THREADS=$threads "${l[@]}" "$DISTZO" run "$name.yaml" > "$name.log" 2>&1 ||
    { cat "$name.log"; fail "$name failed"; }
}
# killed NAME AFTER: runs NAME.yaml on 1 rank until it has finished step
# AFTER, where it hangs (--debug-hang-after-step), then kills it (SIGKILL),
# as a job whose time ran out.
killed() {
  local name=$1 after=$2 pid
  "$DISTZO" run "$name.yaml" --debug-hang-after-step="$after" > "$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    [ "$(grep -c '^[0-9]' "$name/metrics.csv" 2> /dev/null)" = "$after" ] && break
    sleep 0.1
  done
  [ "$(grep -c '^[0-9]' "$name/metrics.csv")" = "$after" ] || { cat "$name.log"; fail "$name did not reach step $after"; }
  kill -KILL "$pid"
  wait "$pid" 2> /dev/null || true
}
# resume NAME RANKS THREADS FROM: NAME.yaml again with `resume: latest`; it
# must resume from NAME/FROM, and its final digest goes to NAME.digest.
resume() {
  local name=$1 ranks=$2 threads=$3 from=$4
  sed -i 's|^checkpoint:$|checkpoint:\n  resume: latest|' "$name.yaml"
  launch "$name" "$ranks" "$threads"
  grep -q "resuming from $name/$from" "$name.log" || fail "$name did not resume from $from: $(head -1 "$name.log")"
  final "$name" > "$name.digest"
}
final() { digest "$1/ckpt-$(printf %06d "$STEPS").h5"; }
# like_ref NAME REF WHAT: NAME's final digest and metrics.csv (columns 1-7) are REF's.
like_ref() {
  same "$2" "$1" "$3"
  cmp -s <(cut -d, -f1-7 "$2/metrics.csv") <(cut -d, -f1-7 "$1/metrics.csv") ||
    fail "$3: metrics.csv differs from $2's: $(diff <(cut -d, -f1-7 "$2/metrics.csv") <(cut -d, -f1-7 "$1/metrics.csv") | head -4)"
}

# 1. One rank, killed: spsa fp32 from the base model (no full checkpoint
#    yet), one_sided bf16 + SR from a full checkpoint plus logged steps.
setup spsa 1 1 1 spsa 'checkpoint:' '  interval: 0'
launch spsa 1 1
final spsa > spsa.digest
setup spsa_k 1 1 1 spsa 'checkpoint:' '  interval: 0' '  log_interval: 2'
killed spsa_k 5
[ "$(cd spsa_k && ls log-*.h5 ckpt-*.h5 2> /dev/null | tr '\n' ' ')" = "log-000002.h5 log-000004.h5 " ] ||
  fail "spsa_k after 5 steps holds: $(ls spsa_k)"
resume spsa_k 1 2 log-000004.h5
grep -q "θ rebuilt for spsa_k/log-000004.h5: the run's base model $BASE, then steps 1 to 4 of its seed log replayed (4 updates, 0 skipped)" spsa_k/run.log ||
  fail "run.log does not say where θ came from: $(grep -m1 rebuilt spsa_k/run.log)"
like_ref spsa_k spsa "spsa fp32, killed after 5, resumed from log-4 (base model + 4 steps) at 2 threads"
pass "spsa fp32: killed after step 5, resumed from log-000004.h5 (base model + 4 logged steps) at 2 threads == straight ($(cat spsa.digest))"

setup one 1 1 3 one_sided "${BF16_SR[@]}" 'checkpoint:' '  interval: 0'
launch one 1 1
final one > one.digest
setup one_k 1 1 3 one_sided "${BF16_SR[@]}" 'checkpoint:' '  interval: 3' '  log_interval: 2'
killed one_k 5
resume one_k 1 2 log-000004.h5
grep -q "θ rebuilt for one_k/log-000004.h5: one_k/ckpt-000003.h5 (step 3), then step 4 of its seed log replayed" one_k/run.log ||
  fail "run.log does not say where θ came from: $(grep -m1 rebuilt one_k/run.log)"
like_ref one_k one "one_sided bf16 + SR, killed after 5, resumed from ckpt-3 + log-4 at 2 threads"
pass "one_sided N=3 bf16 + SR: killed after step 5, resumed from log-000004.h5 (ckpt-000003.h5 + 1 logged step) at 2 threads == straight ($(cat one.digest))"
# A momentum (β 0.9 over h = 3 rows): the logged step after ckpt-3 is rebuilt with the two rows
# before it, which θ already holds.
momentum() { sed -i 's|^optim:$|optim:\n  momentum: 0.9\n  history: 3|' "$1.yaml"; }
setup mom 1 1 2 spsa 'checkpoint:' '  interval: 0'
momentum mom
launch mom 1 1
final mom > mom.digest
setup mom_k 1 1 2 spsa 'checkpoint:' '  interval: 3' '  log_interval: 2'
momentum mom_k
killed mom_k 5
resume mom_k 1 2 log-000004.h5
grep -q "θ rebuilt for mom_k/log-000004.h5: mom_k/ckpt-000003.h5 (step 3), then step 4 of its seed log replayed" mom_k/run.log ||
  fail "run.log does not say where θ came from: $(grep -m1 rebuilt mom_k/run.log)"
like_ref mom_k mom "spsa q=2 with momentum, killed after 5, resumed from ckpt-3 + log-4 at 2 threads"
pass "spsa q=2, momentum 0.9 over 3 rows: killed after step 5, resumed from log-000004.h5 (ckpt-000003.h5 + 1 logged step, its momentum over rows 2-4) at 2 threads == straight ($(cat mom.digest))"

# 2. P = 2 x D = 2: writing log files changes no digest; the final
#    checkpoint removed, `latest` resumes from the newest log file.
MICRO_BATCH=8 setup p2d2 2 2 1 spsa 'checkpoint:' '  interval: 0'
launch p2d2 4 1
final p2d2 > p2d2.digest
MICRO_BATCH=8 setup p2d2_l 2 2 1 spsa 'checkpoint:' '  interval: 0' '  log_interval: 3'
launch p2d2_l 4 1
final p2d2_l > p2d2_l.digest
same p2d2 p2d2_l "P2xD2 spsa with log files every 3 steps vs none"
rm p2d2_l/ckpt-000008.h5
resume p2d2_l 4 2 log-000006.h5
grep -q "the run's base model $BASE, then steps 1 to 6" p2d2_l/run.log || fail "p2d2_l: $(grep -m1 rebuilt p2d2_l/run.log)"
like_ref p2d2_l p2d2 "P2xD2 spsa, resumed from log-6 at 2 threads"
MICRO_BATCH=8 setup p2d2_one 2 2 3 one_sided "${BF16_SR[@]}" 'checkpoint:' '  interval: 0'
launch p2d2_one 4 1
final p2d2_one > p2d2_one.digest
MICRO_BATCH=8 setup p2d2_one_l 2 2 3 one_sided "${BF16_SR[@]}" 'checkpoint:' '  interval: 4' '  log_interval: 3'
launch p2d2_one_l 4 1
final p2d2_one_l > p2d2_one_l.digest
same p2d2_one p2d2_one_l "P2xD2 one_sided bf16 + SR with log files every 3 steps vs none"
rm p2d2_one_l/ckpt-000008.h5
resume p2d2_one_l 4 2 log-000006.h5
grep -q "p2d2_one_l/ckpt-000004.h5 (step 4), then steps 5 to 6" p2d2_one_l/run.log ||
  fail "p2d2_one_l: $(grep -m1 rebuilt p2d2_one_l/run.log)"
like_ref p2d2_one_l p2d2_one "P2xD2 one_sided bf16 + SR, resumed from ckpt-4 + log-6 at 2 threads"
pass "P2xD2: log files change no digest (spsa fp32, one_sided bf16 + SR); resumed from log-000006.h5 (base model + 6 steps; ckpt-000004.h5 + 2) at 2 threads == straight"

# 3. An explicit log file, alone in a directory: θ from the base model.
mkdir lone
cp one_k/log-000004.h5 lone/
setup lone 1 1 3 one_sided "${BF16_SR[@]}" 'checkpoint:' '  resume: lone/log-000004.h5' '  log_interval: 2'
launch lone 1 1
final lone > lone.digest
grep -q "the run's base model $BASE, then steps 1 to 4" lone/run.log || fail "lone: $(grep -m1 rebuilt lone/run.log)"
same one lone "one_sided bf16 + SR resumed from a lone log-000004.h5"
pass "resume: DIR/log-000004.h5 named, no full checkpoint beside it: base model + 4 steps == straight"

# 4. inspect, replay and the size of a log file.
"$DISTZO" inspect spsa_k/log-000006.h5 > log.inspect
grep -q "(log-only checkpoint: distzo_format \"seed_log\", format 1; the training state without θ)" log.inspect &&
  grep -q "training      step 6 of run" log.inspect && grep -q "seed log      6 steps (0 skipped)" log.inspect ||
  fail "inspect of a log file: $(cat log.inspect)"
if digest spsa_k/log-000006.h5 > bad.log 2>&1; then fail "inspect --digest of a log file printed $(cat bad.log)"; fi
grep -q "is a log-only checkpoint: it holds no tensors to digest" bad.log || fail "inspect --digest: $(cat bad.log)"
"$DISTZO" replay "$BASE" spsa_k/log-000006.h5 -o replayed.h5 > replay.log 2>&1 || { cat replay.log; fail "replay of a log file failed"; }
grep -q "the digest equals the one spsa_k/log-000006.h5 recorded" replay.log || fail "replay: $(cat replay.log)"
"$DISTZO" replay "$BASE" spsa/ckpt-000008.h5 --steps 6 -o replayed6.h5 > /dev/null
[ "$(digest replayed.h5)" = "$(digest replayed6.h5)" ] || fail "replay of log-6 != replay of the straight run's 6 steps"
bytes=$(stat -c %s spsa_k/log-000006.h5)
[ "$bytes" -lt 16384 ] || fail "a log file of 6 steps takes $bytes bytes"
pass "inspect describes a log file (--digest refuses), replay rebuilds its θ, it takes $bytes bytes"

# 5. Refusals.
# Another base model: the log's θ can only come from its run's.
setup base 1 1 1 spsa 'checkpoint:' '  interval: 0' '  log_interval: 2'
killed base 3
cp base.yaml other.yaml
sed -i "s|path: $BASE|path: replayed.h5|; s|^checkpoint:\$|checkpoint:\\n  resume: latest\\n  allow_changes: [model]|" other.yaml
if "$DISTZO" run other.yaml > other.log 2>&1; then fail "a log file resumed onto another base model"; fi
grep -q "is rebuilt from its run's base model, of parameter digest [0-9a-f]\{16\} (no full checkpoint of run [0-9a-f]* at or before step 2 in base reads back whole), but model.path replayed.h5 has digest $(digest replayed.h5): not that model" other.log ||
  fail "another base model: $(cat other.log)"
sed "s|path: replayed.h5|path: nowhere.h5|" other.yaml > missing.yaml
if "$DISTZO" run missing.yaml > missing.log 2>&1; then fail "a log file resumed with no base model"; fi
grep -q "model.path: .*nowhere.h5" missing.log || fail "missing base model: $(cat missing.log)"
pass "a log file with no full checkpoint refuses another base model (both digests named) and a missing one"

# A log whose digest the replay does not reach: the run changed its weight
# decay at a resume after step 4 (allowed), so its files record the new one
# for every step; from ckpt-4 the rows after it replay, from the base model not.
setup wd 1 1 1 spsa 'checkpoint:' '  interval: 0'
sed -i 's|steps: 8|steps: 4|' wd.yaml
launch wd 1 1
sed -i 's|steps: 4|steps: 8|; s|weight_decay: 0.01|weight_decay: 0.02|; s|^checkpoint:$|checkpoint:\n  log_interval: 2\n  allow_changes: [optim.weight_decay]\n  resume: latest|' wd.yaml
killed wd 7
mv wd/ckpt-000004.h5 wd/ckpt-000004.h5.aside
if "$DISTZO" run wd.yaml > wd_bad.log 2>&1; then fail "a log file whose digest the replay does not reach resumed"; fi
grep -q "has digest [0-9a-f]\{16\}, but wd/log-000006.h5 recorded [0-9a-f]\{16\}: not resumed" wd_bad.log || fail "digest mismatch: $(cat wd_bad.log)"
[ ! -e wd/ckpt-000008.h5 ] || fail "the refused resume trained"
mv wd/ckpt-000004.h5.aside wd/ckpt-000004.h5
launch wd 1 1
grep -q "θ rebuilt for wd/log-000006.h5: wd/ckpt-000004.h5 (step 4), then steps 5 to 6" wd/run.log || fail "wd: $(grep -m1 rebuilt wd/run.log)"
pass "a log whose recorded digest the replay does not reach is refused; from the full checkpoint it resumes"

# A log's rows were rounded in its run's storage: a resume from it into
# another is refused, even when allowed (a full checkpoint converts).
setup fp32 1 1 3 one_sided 'precision:' '  storage: fp32' 'checkpoint:' '  resume: lone/log-000004.h5' \
  '  allow_changes: [precision.storage]'
if "$DISTZO" run fp32.yaml > fp32.log 2>&1; then fail "a bf16 log file resumed into fp32"; fi
grep -q "fp32.yaml:[0-9]*: precision.storage: the log-only checkpoint lone/log-000004.h5 rebuilds θ in its run's bf16 with stochastic rounding" fp32.log ||
  fail "storage change: $(cat fp32.log)"
pass "a resume from a log file into another storage is refused, naming the key and the run's storage"

# A damaged log file: named, refused; with latest, passed over for the one before.
cp -r spsa_k damaged
offset=$(h5dump -p -H -d /distzo/seed_log/g damaged/log-000006.h5 | sed -n 's/^ *OFFSET \([0-9]*\)$/\1/p')
[ -n "$offset" ] || fail "no offset of the seed log's g"
printf '\x5a' | dd of=damaged/log-000006.h5 bs=1 seek=$((offset + 5)) conv=notrunc status=none
rm damaged/ckpt-000008.h5
setup named 1 1 1 spsa 'checkpoint:' '  resume: damaged/log-000006.h5'
if "$DISTZO" run named.yaml > named.log 2>&1; then fail "a damaged log file resumed"; fi
grep -q "the log-only checkpoint damaged/log-000006.h5 does not read back whole (.*checksum" named.log || fail "damaged, named: $(cat named.log)"
sed 's|dir: spsa_k|dir: damaged|' spsa_k.yaml > damaged.yaml
launch damaged 1 2
grep -q "warning: passed over checkpoint damaged/log-000006.h5: .*checksum" damaged/run.log || fail "no warning: $(head -5 damaged/run.log)"
grep -q "resuming from damaged/log-000004.h5" damaged.log || fail "damaged, latest: $(head -1 damaged.log)"
[ "$(final damaged)" = "$(cat spsa.digest)" ] || fail "resumed past a damaged log: another digest"
pass "a damaged log file is refused when named, passed over by latest (which resumes from the one before)"

# Another run's log file in the directory: latest leaves it alone.
cp p2d2_one_l/log-000006.h5 base/
sed -i 's|^checkpoint:$|checkpoint:\n  resume: latest|' base.yaml
launch base 1 1
grep -q "resuming from base/log-000002.h5" base.log || fail "latest took another run's log: $(head -1 base.log)"
cmp -s base/log-000006.run-*.h5 p2d2_one_l/log-000006.h5 ||
  fail "the other run's log-000006.h5 was not kept aside intact: $(ls base)"
[ "$(h5dump -a /run_id base/log-000006.h5 | sed -n 's/.*(0): "\([0-9a-f]*\)".*/\1/p')" = "$(cat base/run_id)" ] ||
  fail "base/log-000006.h5 is not the run's own"
[ "$(final base)" = "$(cat spsa.digest)" ] || fail "base: another digest"
pass "another run's log file is not resumed; this run's own of that step moves it aside"
