#!/usr/bin/env bash
# optim.estimator: one_sided (FZOO's N one-sided directions and L(θ),
# docs/perturbation.md) on the demo model, a short run: the digest of one
# resident rank at OPENBLAS_NUM_THREADS=1 is the digest at 2 threads with
# the N + 1 = 4 evaluations split over P = 2 and P = 4 ranks (a shared,
# sliced master), offloaded, and P = 2 x D = 2 equals D = 2; bf16 with
# stochastic rounding agrees between one rank and P = 2 offloaded; a resume
# mid-run continues bit for bit; spsa and one_sided give different digests;
# metrics.csv has no loss_minus for one-sided steps; a P that does not
# divide N + 1 and a resume that changes the estimator are refused;
# `distzo plan` counts N + 1 evaluations.
source "$(dirname "$0")/lib.sh" "$@"
STEPS=6
MICRO_BATCH=16
# one_sided NAME: the deck NAME.yaml's optim section gets FZOO's estimator and z.
one_sided() { sed -i 's|^optim:$|optim:\n  estimator: one_sided\n  distribution: rademacher|' "$1.yaml"; }
one_sided_run() {  # one_sided_run NAME THREADS RANKS P D [extra lines]
  local name=$1 threads=$2 ranks=$3 p=$4 d=$5
  shift 5
  QUERIES=3 demo_deck "$name" "$STEPS" "$p" "$d" "$@"
  one_sided "$name"
  local launch=()
  [ "$ranks" -gt 1 ] && launch=("$MPIEXEC" -n "$ranks")
  OPENBLAS_NUM_THREADS=$threads "${launch[@]}" "$DISTZO" run "$name.yaml" > "$name.log" 2>&1 ||
    { cat "$name.log"; fail "$name failed"; }
  digest "$name/ckpt-$(printf %06d "$STEPS").h5" > "$name.digest"
}

one_sided_run ref 1 1 1 1
grep -q "estimator: one_sided" ref/deck.resolved.yaml || fail "the resolved deck lacks optim.estimator"
head -2 ref/metrics.csv | tail -1 | awk -F, '$4 != "" { exit 1 }' || fail "a one-sided step wrote loss_minus: $(head -2 ref/metrics.csv)"
one_sided_run p2 2 2 2 1
same ref p2 "one_sided N=3, P=2 (shared master) at 2 threads vs 1 rank at 1"
grep -q "shared by the node's 2 ranks" p2/run.log || fail "P=2 did not share θ: $(grep placement p2/run.log)"
one_sided_run p4 1 4 4 1
same ref p4 "one_sided N=3, P=4: every evaluation on its own rank, vs 1 rank"
one_sided_run offload 2 1 1 1 'placement:' '  mode: offload' '  resident_blocks: 0'
same ref offload "one_sided, every block offloaded at 2 threads vs resident at 1"
one_sided_run p2_own_offload 2 2 2 1 'placement:' '  mode: offload' '  resident_blocks: 1' \
  '  share_host_master: false' '  perturbed_weights: one_at_a_time'
same ref p2_own_offload "one_sided, P=2, each rank its own offloaded θ, w one at a time"
pass "one_sided N=3: 1 rank == 2 threads, P=2 (shared, and own offloaded θ one at a time), P=4, offloaded ($(cat ref.digest))"

MICRO_BATCH=8 one_sided_run d2 1 2 1 2
MICRO_BATCH=8 one_sided_run p2d2 2 4 2 2
same d2 p2d2 "one_sided, P=2 x D=2 on 4 ranks vs D=2 on 2"
pass "one_sided, P=2 x D=2 == D=2 ($(cat d2.digest))"

BF16_SR=('precision:' '  storage: bf16' '  rounding: stochastic')
one_sided_run sr 1 1 1 1 "${BF16_SR[@]}"
one_sided_run sr_p2 2 2 2 1 "${BF16_SR[@]}" 'placement:' '  mode: offload' '  resident_blocks: 0'
same sr sr_p2 "one_sided bf16 + SR, P=2 offloaded at 2 threads vs 1 rank"
[ "$(cat sr.digest)" != "$(cat ref.digest)" ] || fail "bf16 gave the fp32 digest"
pass "one_sided, bf16 + stochastic rounding: P=2 offloaded == 1 rank ($(cat sr.digest))"

demo_run spsa 1 1 1 1
[ "$(cat spsa.digest)" != "$(cat ref.digest)" ] || fail "spsa and one_sided gave one digest"

# Resume: 3 steps, then on to 6 from the checkpoint == 6 at once.
QUERIES=3 demo_deck half 3 1 1
one_sided half
sed -i 's|dir: half|dir: resumed|' half.yaml
"$DISTZO" run half.yaml > half.log 2>&1 || { cat half.log; fail "the first 3 steps failed"; }
QUERIES=3 demo_deck resumed "$STEPS" 1 1 'checkpoint:' '  resume: latest'
one_sided resumed
"$DISTZO" run resumed.yaml > resumed.log 2>&1 || { cat resumed.log; fail "the resume failed"; }
digest resumed/ckpt-$(printf %06d "$STEPS").h5 > resumed.digest
same ref resumed "one_sided, resumed after 3 steps vs uninterrupted"
pass "one_sided resumes bit for bit"

# Refusals.
sed 's|estimator: one_sided|estimator: spsa|' resumed.yaml > changed.yaml
if "$DISTZO" run changed.yaml > changed.log 2>&1; then fail "a resume changed the estimator"; fi
grep -q "optim.estimator" changed.log || fail "estimator change message: $(cat changed.log)"
QUERIES=3 demo_deck odd 2 3 1
one_sided odd
if "$MPIEXEC" -n 3 "$DISTZO" run odd.yaml > odd.log 2>&1; then fail "P=3 with N=3 ran"; fi
grep -q "P must divide the N + 1 evaluations of a one_sided step: optim.queries + 1 = 3 + 1 = 4 is not a multiple of P = 3; allowed P: 1, 2, 4" odd.log ||
  fail "P / N+1 message: $(cat odd.log)"
pass "a resume that changes optim.estimator, and P=3 for N+1=4, are refused"

# ε far below float32's resolution of the weights: every direction gives L(θ), σ = 0.
QUERIES=3 demo_deck flat 6 1 1
one_sided flat
sed -i 's|eps: 1.0e-3|eps: 1.0e-30|' flat.yaml
if "$DISTZO" run flat.yaml > flat.log 2>&1; then fail "a run whose every step had σ = 0 finished"; fi
grep -q "the one-sided losses were all equal (σ = 0, g undefined), update skipped" flat.log ||
  fail "σ = 0 step message: $(grep -m1 'step 1' flat.log)"
grep -q "raise it (FZOO and MeZO use 1e-3)" flat.log || fail "σ = 0 stop message: $(tail -2 flat.log)"
grep -q "tokens, classification, one_sided q=3" ref/run.log || fail "run.log's header lacks the estimator: $(head -1 ref/run.log)"
pass "σ = 0 says so and asks for a larger eps; run.log's header names the estimator"

QUERIES=8 demo_deck planned 2 3 1
one_sided planned
"$DISTZO" plan planned.yaml > plan.out 2>&1 ||
  { cat plan.out; fail "plan failed"; }
grep -q "one_sided q = 8, P = 3: 3 evaluations per rank" plan.out || fail "plan: $(grep workload plan.out)"
pass "distzo plan: one_sided with N=8 over P=3 is 3 evaluations per rank"
