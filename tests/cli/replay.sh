#!/usr/bin/env bash
# distzo replay: θ rebuilt from the base model and a checkpoint's seed log,
# bit for bit, for spsa and one_sided, fp32 and bf16 with stochastic
# rounding, runs on 1 rank, P = 2 (a shared, sliced master) and P = 2 x D = 2,
# plain and with a momentum over the log's last rows,
# a resumed run, and --steps N against the run's own step-N checkpoint;
# refusals: a base model that is not the run's, a model as SOURCE, N past
# the log.
source "$(dirname "$0")/lib.sh" "$@"
STEPS=6
MICRO_BATCH=16
BASE=$TEST_DATA/../../inputs/demo/model.h5
BF16_SR=('precision:' '  storage: bf16' '  rounding: stochastic')

# train NAME RANKS P D QUERIES ESTIMATOR [extra lines]: the demo deck, checkpoints every 3 steps
train() {
  local name=$1 ranks=$2 p=$3 d=$4 q=$5 estimator=$6
  shift 6
  QUERIES=$q demo_deck "$name" "$STEPS" "$p" "$d" 'checkpoint:' '  interval: 3' '  keep: 3' "$@"
  sed -i "s|^optim:\$|optim:\\n  estimator: $estimator\\n  weight_decay: 0.01${OPTIM_LINES:-}|" "$name.yaml"
  local launch=()
  [ "$ranks" -gt 1 ] && launch=("$MPIEXEC" -n "$ranks")
  "${launch[@]}" "$DISTZO" run "$name.yaml" > "$name.log" 2>&1 || { cat "$name.log"; fail "$name failed"; }
}
# replayed NAME [--steps N]: replay NAME's last checkpoint; the digest must equal the run's
replayed() {
  local name=$1; shift
  "$DISTZO" replay "$BASE" "$name/ckpt-$(printf %06d "$STEPS").h5" -o "$name.replay.h5" "$@" > "$name.replay.log" 2>&1 ||
    { cat "$name.replay.log"; fail "replay of $name failed"; }
}

for estimator in spsa one_sided; do
  q=1; [ "$estimator" = one_sided ] && q=3
  train "${estimator}_fp32" 1 1 1 $q $estimator
  train "${estimator}_bf16" 1 1 1 $q $estimator "${BF16_SR[@]}"
  train "${estimator}_p2" 2 2 1 $q $estimator
  MICRO_BATCH=8 train "${estimator}_p2d2" 4 2 2 $((q == 1 ? 1 : 3)) $estimator "${BF16_SR[@]}"
  for run in fp32 bf16 p2 p2d2; do
    name=${estimator}_$run
    replayed "$name"
    grep -q "the digest equals the one" "$name.replay.log" || fail "$name: $(cat "$name.replay.log")"
    [ "$(digest "$name.replay.h5")" = "$(digest "$name/ckpt-$(printf %06d "$STEPS").h5")" ] ||
      fail "$name: the replayed file's digest differs from the run's"
  done
  pass "$estimator: replay == the run for fp32, bf16 + SR, P=2 (shared master), P=2 x D=2 (bf16 + SR)"
done

# A momentum over the log's last 3 rows (optim.momentum, optim.history): each
# update rebuilt from the rows by the trainer's own function, fp32 and bf16 +
# SR, 1 rank and P=2 x D=2, both estimators.
MOMENTUM='\n  momentum: 0.9\n  history: 3'
OPTIM_LINES=$MOMENTUM train spsa_m_fp32 1 1 1 1 spsa
OPTIM_LINES=$MOMENTUM MICRO_BATCH=8 train spsa_m_p2d2 4 2 2 1 spsa "${BF16_SR[@]}"
OPTIM_LINES=$MOMENTUM train one_sided_m_bf16 1 1 1 3 one_sided "${BF16_SR[@]}"
OPTIM_LINES=$MOMENTUM MICRO_BATCH=8 train one_sided_m_p2d2 4 2 2 3 one_sided
for name in spsa_m_fp32 spsa_m_p2d2 one_sided_m_bf16 one_sided_m_p2d2; do
  grep -q "with momentum 0.9 over h=3 steps" "$name.log" "$name/run.log" || fail "$name did not run with momentum: $(head -1 "$name/run.log")"
  replayed "$name"
  grep -q "the digest equals the one" "$name.replay.log" || fail "$name: $(cat "$name.replay.log")"
done
[ "$(digest spsa_m_fp32/ckpt-000006.h5)" != "$(digest spsa_fp32/ckpt-000006.h5)" ] || fail "momentum 0.9 gave the plain digest"
replayed one_sided_m_bf16 --steps 3
[ "$(digest one_sided_m_bf16.replay.h5)" = "$(digest one_sided_m_bf16/ckpt-000003.h5)" ] || fail "momentum --steps 3 differs from the step-3 checkpoint"
pass "momentum 0.9 over h=3: replay == the run for spsa fp32 (1 rank) and bf16 + SR (P=2 x D=2), one_sided bf16 + SR (1 rank) and fp32 (P=2 x D=2), and --steps 3"

# --steps 3 == the run's own step-3 checkpoint; OUT is a checkpoint of step 3.
replayed spsa_bf16 --steps 3
[ "$(digest spsa_bf16.replay.h5)" = "$(digest spsa_bf16/ckpt-000003.h5)" ] || fail "--steps 3 differs from the step-3 checkpoint"
"$DISTZO" inspect spsa_bf16.replay.h5 > replay3.inspect
grep -q "training      step 3 of run" replay3.inspect || fail "the replay of 3 steps is not a step-3 checkpoint: $(head -8 replay3.inspect)"
pass "--steps 3 == the run's step-3 checkpoint"

# A resumed run's log continues its checkpoint's: replay covers both parts.
QUERIES=3 demo_deck first 3 1 1
sed -i 's|^optim:$|optim:\n  estimator: one_sided|; s|dir: first|dir: resumed|' first.yaml
"$DISTZO" run first.yaml > first.log 2>&1 || { cat first.log; fail "the first 3 steps failed"; }
QUERIES=3 demo_deck resumed "$STEPS" 1 1 'checkpoint:' '  resume: latest'
sed -i 's|^optim:$|optim:\n  estimator: one_sided|' resumed.yaml
"$DISTZO" run resumed.yaml > resumed.log 2>&1 || { cat resumed.log; fail "the resume failed"; }
replayed resumed
grep -q "the digest equals the one" resumed.replay.log || fail "resumed: $(cat resumed.replay.log)"
pass "a resumed run replays whole"

# Refusals.
if "$DISTZO" replay spsa_fp32/ckpt-000003.h5 spsa_fp32/ckpt-000006.h5 -o bad.h5 > bad.log 2>&1; then fail "replay took a checkpoint as the base"; fi
grep -q "not its base model" bad.log || fail "wrong base: $(cat bad.log)"
if "$DISTZO" replay "$BASE" "$BASE" -o bad.h5 > bad.log 2>&1; then fail "replay took a model as SOURCE"; fi
grep -q "is a model, not a checkpoint" bad.log || fail "model as source: $(cat bad.log)"
if "$DISTZO" replay "$BASE" spsa_fp32/ckpt-000003.h5 -o bad.h5 --steps 4 > bad.log 2>&1; then fail "replay went past the log"; fi
grep -q "is past" bad.log || fail "--steps past: $(cat bad.log)"
if "$DISTZO" replay spsa_fp32/ckpt-000006.h5 "$BASE" -o bad.h5 > bad.log 2>&1; then fail "replay took swapped arguments"; fi
grep -q "BASE.h5 comes first, then SOURCE.h5" bad.log || fail "swapped arguments: $(cat bad.log)"
[ ! -e bad.h5 ] || fail "a refused replay wrote its output"
cp spsa_fp32/ckpt-000006.h5 precious.h5
if "$DISTZO" replay "$BASE" precious.h5 -o ./precious.h5 --steps 3 > bad.log 2>&1; then fail "replay overwrote its SOURCE"; fi
grep -q "an input of the replay" bad.log || fail "-o SOURCE: $(cat bad.log)"
cmp -s precious.h5 spsa_fp32/ckpt-000006.h5 || fail "a refused replay changed its SOURCE"
pass "replay refuses another base model, a model as SOURCE (naming a swap), --steps past the log, and OUT = an input"
