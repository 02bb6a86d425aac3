#!/usr/bin/env bash
# precision.gemm_inputs: storage (docs/perturbation.md, "GEMM inputs in 2
# bytes") on the demo model, a short run: the blocks' matrices are multiplied
# as 2-byte words, so w± of them are words and an evaluation reads θ's words
# in place. The digest is the same on one rank at OPENBLAS_NUM_THREADS=1 and
# 2, with every block offloaded, w one evaluation (and a block's matrices
# one tensor) at a time, P=2 (each rank
# its own θ: auto does not share a master here), D=2 at 1 and 2 threads
# and P2xD2, for bf16 + SR and fp16 + SR; a resume mid-run continues the
# uninterrupted run bit for bit; it differs from gemm_inputs fp32; the plan
# predicts the run's device memory to the byte; a node-shared master and a
# float32 θ are refused with what to do.
source "$(dirname "$0")/lib.sh" "$@"
STEPS=4
MICRO_BATCH=8
BF16=('precision:' '  storage: bf16' '  rounding: stochastic' '  gemm_inputs: storage')
FP16=('precision:' '  storage: fp16' '  rounding: stochastic' '  gemm_inputs: storage')

EVAL_EXAMPLES=16
refused() {  # refused NAME TEXT: NAME.yaml fails, and its output contains TEXT
  set +e; "$DISTZO" run "$1.yaml" > "$1.log" 2>&1; local status=$?; set -e
  [ "$status" -ne 0 ] || fail "$1 was accepted"
  grep -qF "$2" "$1.log" || fail "$1: the refusal does not say \"$2\": $(cat "$1.log")"
}

demo_run b_t1 1 1 1 1 "${BF16[@]}"
grep -qF "the matrices are multiplied as 2-byte bf16 words" b_t1/run.log ||
  fail "run.log does not say the GEMM inputs are 2-byte: $(grep -i precision b_t1/run.log)"
"$DISTZO" inspect b_t1/ckpt-$(printf %06d "$STEPS").h5 > b_t1.inspect
grep -qF "matrices multiplied as 2-byte words (precision.gemm_inputs: storage)" b_t1.inspect ||
  fail "inspect does not say the checkpoint's run multiplied 2-byte words: $(grep storage b_t1.inspect)"
demo_run b_t2 2 1 1 1 "${BF16[@]}"
same b_t1 b_t2 "bf16 GEMM inputs, 1 rank at 1 and 2 threads"
demo_run b_offload 2 1 1 1 "${BF16[@]}" 'placement:' '  mode: offload' '  resident_blocks: 0'
same b_t1 b_offload "bf16 GEMM inputs, every block offloaded at 2 threads vs resident at 1"
demo_run b_one 1 1 1 1 "${BF16[@]}" 'placement:' '  mode: offload' '  resident_blocks: 1' '  perturbed_weights: one_at_a_time'
same b_t1 b_one "bf16 GEMM inputs, offloaded K=1 with w one at a time vs resident"
demo_run b_p2 2 2 2 1 "${BF16[@]}"
same b_t1 b_p2 "bf16 GEMM inputs, P=2 at 2 threads vs 1 rank at 1"
grep -q "shared by the node's" b_p2/run.log && fail "P=2 shared a master under gemm_inputs: storage"
grep -qF "each rank holds its own θ (share_host_master auto shares none" b_p2/run.log ||
  fail "run.log does not say why P=2 holds a θ per rank: $(grep placement b_p2/run.log)"
pass "bf16 GEMM inputs: 1 rank at 1 and 2 threads, offloaded, one at a time and P=2 give $(cat b_t1.digest)"

demo_run b_d2t1 1 2 1 2 "${BF16[@]}"
demo_run b_d2t2 2 2 1 2 "${BF16[@]}"
same b_d2t1 b_d2t2 "bf16 GEMM inputs, D=2 at 1 and 2 threads per rank"
demo_run b_p2d2 1 4 2 2 "${BF16[@]}" 'placement:' '  mode: offload' '  resident_blocks: 0'
same b_d2t1 b_p2d2 "bf16 GEMM inputs, P2xD2 (offloaded) vs D=2"
pass "bf16 GEMM inputs: D=2 at 1 and 2 threads and P2xD2 offloaded give $(cat b_d2t1.digest)"

demo_run h_t1 1 1 1 1 "${FP16[@]}"
demo_run h_p2 2 2 2 1 "${FP16[@]}" 'placement:' '  mode: offload' '  resident_blocks: 0'
same h_t1 h_p2 "fp16 GEMM inputs, P=2 offloaded at 2 threads vs 1 rank at 1"
demo_run b_f32 1 1 1 1 'precision:' '  storage: bf16' '  rounding: stochastic'
[ "$(cat b_t1.digest)" != "$(cat b_f32.digest)" ] || fail "gemm_inputs storage and fp32 give the same digest"
pass "fp16 GEMM inputs: P=2 offloaded == 1 rank ($(cat h_t1.digest)); bf16 with float32 GEMM inputs differs"

# The plan of the run's deck is what the run allocated, to the byte: w± of
# a block together, and a tensor at a time (one_at_a_time).
for name in b_t1 b_one; do
  planned=$("$DISTZO" plan $name.yaml | sed -n 's/^  total .*(\([0-9]*\) B).*/\1/p')
  measured=$(sed -n "s/^${STAMP}memory: device peak [^(]*(\([0-9]*\) B).*/\1/p" $name/run.log)
  [ -n "$planned" ] && [ "$planned" = "$measured" ] || fail "$name: plan says $planned B, the run used $measured B"
done
pass "distzo plan predicts the runs' device memory to the byte (together and a tensor at a time)"

# A resume at step 2 continues the 4-step run bit for bit.
demo_resume 2 "${BF16[@]}"
same resumed b_t1 "bf16 GEMM inputs, 2 steps + resume + 2 steps vs 4 straight"
# It changes the trajectory: a resume with other GEMM inputs is refused.
demo_deck other_inputs 6 1 1 'precision:' '  storage: bf16' '  rounding: stochastic' \
  'checkpoint:' '  resume: latest'
sed -i 's|dir: other_inputs|dir: resumed|' other_inputs.yaml
refused other_inputs "precision.gemm_inputs: storage in the checkpoint, fp32 in the deck"
pass "bf16 GEMM inputs: 2 + resume + 2 steps == 4 steps straight; a resume with fp32 inputs is refused"

demo_deck no_words 1 1 1 'precision:' '  storage: fp32' '  gemm_inputs: storage'
refused no_words "precision.gemm_inputs: \`storage\` multiplies 2-byte words of θ's storage dtype, but θ is stored in fp32"
demo_deck shared 1 2 1 "${BF16[@]}" 'placement:' '  share_host_master: true'
set +e; "$MPIEXEC" -n 2 "$DISTZO" run shared.yaml > shared.log 2>&1; status=$?; set -e
[ "$status" -ne 0 ] || fail "a node-shared master with 2-byte GEMM inputs was accepted"
grep -qF "cannot be combined with precision.gemm_inputs: storage; set share_host_master to false or auto" shared.log ||
  fail "the refusal of a shared master does not say why: $(cat shared.log)"
set +e; "$DISTZO" plan "$TEST_DATA/../../perf/opt_configs/opt-1.3b.json" --storage bf16 --gemm-inputs storage \
  --placement offload --gpus-per-node 2 > sliced_plan.log 2>&1; status=$?; set -e
[ "$status" -ne 0 ] && grep -qF "which --gemm-inputs storage cannot use" sliced_plan.log ||
  fail "plan --gpus-per-node with --gemm-inputs storage was not refused: $(cat sliced_plan.log)"
pass "gemm_inputs storage with a float32 θ, with a node-shared master and in plan's sliced schedule: refused with what to do"
