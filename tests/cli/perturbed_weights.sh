#!/usr/bin/env bash
# placement.perturbed_weights: one_at_a_time (docs/placement.md): a rank's
# evaluations share one block arena and one copy of the edges for their w,
# which changes memory, never bits. Against the plain one-rank resident run
# (`together`, OPENBLAS_NUM_THREADS=2), at 1 thread: the same digest and the
# same loss, L+, L- and g at every step — classification and causal LM,
# q = 1 and 2, resident and offloaded (K = 0 and 1), θ in float32, bf16 with
# stochastic rounding and fp16, P = 2 with each rank its own θ; a run with a
# sliced node-shared master refuses it, naming the key; placement.slots:
# prefetch + 1 gives the same bits, fewer is refused; and `distzo plan`
# predicts the run's measured device memory to the byte, one block arena
# and (evaluations - 1) edge copies below `together`.
source "$(dirname "$0")/lib.sh" "$@"
STEPS=6
"$DISTZO" make-model deep.h5 --layers 3 --hidden 32 --heads 4 --ffn 64 --vocab 96 --positions 32 --seed 5 >/dev/null
"$DISTZO" make-synthetic lm.h5 --task causal_lm --examples 64 --seq-len 12 --vocab 96 --seed 3 >/dev/null

# run NAME THREADS TRAIN [YAML lines...]: STEPS steps of the 3-layer model.
run() {
  local name=$1 threads=$2 train=$3; shift 3
  deck "$name" "$STEPS" "$name" 'checkpoint:' '  interval: 1000' "$@"
  sed -i "s|path: model.h5|path: deep.h5|; s|train: train.h5|train: $train|; s|eval: eval.h5|eval: $train|" "$name.yaml"
  OPENBLAS_NUM_THREADS=$threads "${LAUNCH[@]}" "$DISTZO" run "$name.yaml" > "$name.log" 2>&1 ||
    { cat "$name.log"; fail "$name failed"; }
}
final() { digest "$1/ckpt-$(printf %06d "$STEPS").h5"; }
same_run() {  # same_run REF RUN: same final digest, same loss, L+, L- and g at every step
  [ "$(final "$2")" = "$(final "$1")" ] || fail "$2: digest $(final "$2") != $1's $(final "$1")"
  for c in loss loss_plus loss_minus g; do
    cmp -s <(column "$1/metrics.csv" $c) <(column "$2/metrics.csv" $c) || fail "$2: column $c differs from $1"
  done
}
placement() {  # placement MODE K [YAML lines...]: the placement section with one_at_a_time
  PL=('placement:' "  mode: $1" "  resident_blocks: $2" '  perturbed_weights: one_at_a_time'); shift 2
  PL+=("$@")
}
BF16=('precision:' '  storage: bf16' '  rounding: stochastic')
FP16=('precision:' '  storage: fp16')

LAUNCH=()
checked=0
for task in classification causal_lm q2; do
  train=train.h5; q=1
  [ "$task" = causal_lm ] && train=lm.h5
  [ "$task" = q2 ] && q=2
  for dtype in fp32 bf16 fp16; do
    extra=()
    [ "$dtype" = bf16 ] && extra=("${BF16[@]}")
    [ "$dtype" = fp16 ] && extra=("${FP16[@]}")
    QUERIES=$q run "ref_${task}_$dtype" 2 "$train" "${extra[@]}"
    for where in "resident 0" "offload 0" "offload 1"; do
      placement $where
      name="one_${task}_${dtype}_${where// /}"
      QUERIES=$q run "$name" 1 "$train" "${PL[@]}" "${extra[@]}"
      same_run "ref_${task}_$dtype" "$name"
      grep -q "perturbed weights one evaluation at a time" "$name/run.log" || fail "$name: run.log does not say one_at_a_time"
      checked=$((checked + 1))
    done
  done
done
pass "one_at_a_time == together on one rank ($checked runs: 3 tasks x fp32, bf16 SR, fp16 x resident, offload K=0, K=1; 1 vs 2 BLAS threads)"

# The fewest slots (placement.slots: prefetch + 1): same bits, one slot less.
placement offload 0 '  slots: 2'
run one_slots2 1 lm.h5 "${PL[@]}" "${BF16[@]}"
same_run ref_causal_lm_bf16 one_slots2
grep -q "through 2 device slots (prefetch 1)" one_slots2/run.log || fail "slots: 2: $(grep placement: one_slots2/run.log)"
placement offload 0 '  slots: 1'
deck few "$STEPS" few "${PL[@]}"
set +e; "$DISTZO" run few.yaml > few.log 2>&1; status=$?; set -e
[ "$status" -ne 0 ] && grep -qF "few.yaml:" few.log && grep -qF "slots = 1 is too few for prefetch 1" few.log ||
  fail "slots: 1 with prefetch 1: status $status, $(cat few.log)"
pass "placement.slots: 2 (prefetch + 1) == 3 slots, bit for bit; slots: 1 is refused naming the line"

# P = 2, each rank its own θ (one evaluation each), and q = 2 (two each).
LAUNCH=("$MPIEXEC" -n 2)
placement resident 0 '  share_host_master: false'
run p2_one 1 train.h5 'parallel:' '  perturbation: 2' "${PL[@]}"
same_run ref_classification_fp32 p2_one
QUERIES=2 run p2_one_q2 1 train.h5 'parallel:' '  perturbation: 2' "${PL[@]}"
same_run ref_q2_fp32 p2_one_q2
pass "P=2 (each rank its own θ) with one_at_a_time == one rank together, q = 1 and 2"

# A node-shared sliced master exchanges every evaluation's w at once: refused.
placement resident 0 '  share_host_master: true'
deck sliced "$STEPS" sliced 'parallel:' '  perturbation: 2' "${PL[@]}"
set +e; "${LAUNCH[@]}" "$DISTZO" run sliced.yaml > sliced.log 2>&1; status=$?; set -e
[ "$status" -ne 0 ] && grep -qF "sliced.yaml:" sliced.log &&
  grep -qF "placement.perturbed_weights: one_at_a_time needs a rank to materialise its own w" sliced.log ||
  fail "one_at_a_time with a shared master: status $status, $(cat sliced.log)"
[ ! -e sliced/metrics.csv ] || fail "the refused run wrote metrics"
set +e; "$DISTZO" plan sliced.yaml > sliced_plan.log 2>&1; status=$?; set -e
[ "$status" -ne 0 ] && grep -qF "sliced.yaml:" sliced_plan.log &&
  grep -qF "placement.perturbed_weights: one_at_a_time needs a rank to materialise its own w" sliced_plan.log ||
  fail "plan of one_at_a_time with a shared master: status $status, $(cat sliced_plan.log)"
pass "one_at_a_time with a sliced node-shared master is refused by run and plan, naming the deck line"
LAUNCH=()

# The plan predicts every measured role to the byte, for both modes.
bytes() {  # bytes FILE WHAT: the exact byte count after "WHAT <size> (" in a memory line
  sed -n "s/.*$2 [^(]*(\([0-9]*\) B).*/\1/p" "$1" | head -n 1
}
for name in ref_causal_lm_bf16 one_causal_lm_bf16_offload0 one_slots2 ref_q2_fp32 one_q2_fp32_resident0; do
  "$DISTZO" plan "$name.yaml" > "$name.plan" || fail "plan $name"
  grep "^${STAMP}memory:" "$name/run.log" > "$name.measured"
  for role in weights scratch activations; do
    m=$(bytes "$name.measured" "$role"); p=$(bytes "$name.plan" "$role")
    [ -n "$m" ] && [ "$m" = "$p" ] || fail "$name: $role measured $m B, planned $p B"
  done
  m=$(bytes "$name.measured" "device peak"); p=$(bytes "$name.plan" "total")
  [ -n "$m" ] && [ "$m" = "$p" ] || fail "$name: device peak measured $m B, planned $p B"
done
# q = 2 resident: together holds w+ and w- of a block and 4 copies of the edges; one at a time one of each.
tog=$(bytes ref_q2_fp32.plan scratch); one=$(bytes one_q2_fp32_resident0.plan scratch)
[ "$one" -lt "$tog" ] || fail "one_at_a_time scratch $one B is not below together's $tog B"
grep -q "w of one block and of the edges, one evaluation at a time" one_q2_fp32_resident0.plan ||
  fail "plan does not describe one_at_a_time: $(grep scratch one_q2_fp32_resident0.plan)"
pass "plan == measured to the byte (weights, scratch, activations, device peak); q = 2 scratch $tog B together, $one B one at a time"
