#!/usr/bin/env bash
# optim.perturbed_blocks (block-sparse steps: K of the B decoder blocks a
# step, chosen from (seed, step); docs/perturbation.md) on the demo model
# (B = 2, K = 1), for both estimators: the digest of one resident rank at
# OPENBLAS_NUM_THREADS=1 is the digest at 2 threads with P = 2 on each rank's
# own θ, P = 2 on a node-shared sliced master, every block offloaded, and
# P = 2 x D = 2 equals D = 2; bf16 with stochastic rounding agrees between
# one rank and P = 2 offloaded, also with bf16 GEMM inputs; with a momentum
# too. (One rank's own θ reads an unperturbed block's θ' itself, a shared
# master materialises w± = θ': the two agree bit for bit.) K = 0 written out
# is the run without the key, and K = 1 differs from it. 3 steps + resume + 3 == 6
# straight; distzo replay rebuilds θ bit for bit (fp32, bf16 + SR, momentum,
# P2xD2); a log-only checkpoint resumes. run.log, inspect and plan name it;
# K >= B and a resume that changes K are refused.
source "$(dirname "$0")/lib.sh" "$@"
STEPS=6
MICRO_BATCH=16
BASE=$TEST_DATA/../../inputs/demo/model.h5
SPARSE=('  perturbed_blocks: 1')
MOMENTUM=('  momentum: 0.9' '  history: 3')


# sparse_run NAME ESTIMATOR THREADS RANKS P D OPTIM_EXTRA [deck lines]: a block-sparse
# run with weight decay, its final digest in NAME.digest. OPTIM_EXTRA: "momentum" or "".
sparse_run() {
  local name=$1 estimator=$2 threads=$3 ranks=$4 p=$5 d=$6 extra=$7
  shift 7
  QUERIES=$(queries_of "$estimator") demo_deck "$name" "$STEPS" "$p" "$d" "$@"
  mapfile -t lines < <(estimator_lines "$estimator")
  local more=()
  [ "$extra" = momentum ] && more=("${MOMENTUM[@]}")
  optim_lines "$name" "${lines[@]}" "${SPARSE[@]}" '  weight_decay: 0.01' "${more[@]}"
  local launch=()
  [ "$ranks" -gt 1 ] && launch=("$MPIEXEC" -n "$ranks")
  OPENBLAS_NUM_THREADS=$threads "${launch[@]}" "$DISTZO" run "$name.yaml" > "$name.log" 2>&1 ||
    { cat "$name.log"; fail "$name failed"; }
  digest "$name/ckpt-$(printf %06d "$STEPS").h5" > "$name.digest"
}
# replayed NAME: distzo replay of NAME's last checkpoint from the base model equals it.
replayed() {
  "$DISTZO" replay "$BASE" "$1/ckpt-$(printf %06d "$STEPS").h5" -o "$1.replay.h5" > "$1.replay.log" 2>&1 ||
    { cat "$1.replay.log"; fail "replay of $1 failed"; }
  grep -q "the digest equals the one" "$1.replay.log" || fail "$1: $(cat "$1.replay.log")"
  [ "$(digest "$1.replay.h5")" = "$(cat "$1.digest")" ] || fail "$1: the replay's digest is not the run's"
}

OFFLOAD=('placement:' '  mode: offload' '  resident_blocks: 0')
BF16_SR=('precision:' '  storage: bf16' '  rounding: stochastic')
for est in spsa one_sided; do
  sparse_run ${est}_ref $est 1 1 1 1 ""
  grep -q "perturbed_blocks: 1" ${est}_ref/deck.resolved.yaml || fail "the resolved deck lacks optim.perturbed_blocks"
  sparse_run ${est}_p2_own $est 2 2 2 1 "" 'placement:' '  share_host_master: false'
  same ${est}_ref ${est}_p2_own "$est block-sparse, P=2 each rank its own θ at 2 threads vs 1 rank at 1"
  sparse_run ${est}_p2_shared $est 2 2 2 1 ""
  grep -q "shared by the node's 2 ranks" ${est}_p2_shared/run.log || fail "P=2 did not share θ"
  same ${est}_ref ${est}_p2_shared "$est block-sparse, P=2 on a node-shared sliced master vs 1 rank"
  sparse_run ${est}_offload $est 2 1 1 1 "" "${OFFLOAD[@]}"
  same ${est}_ref ${est}_offload "$est block-sparse, every block offloaded at 2 threads vs resident at 1"
  MICRO_BATCH=8 sparse_run ${est}_d2 $est 1 2 1 2 ""
  MICRO_BATCH=8 sparse_run ${est}_p2d2 $est 2 4 2 2 ""
  same ${est}_d2 ${est}_p2d2 "$est block-sparse, P=2 x D=2 on 4 ranks vs D=2 on 2"
  sparse_run ${est}_sr $est 1 1 1 1 "" "${BF16_SR[@]}"
  sparse_run ${est}_sr_p2 $est 2 2 2 1 "" "${BF16_SR[@]}" "${OFFLOAD[@]}"
  same ${est}_sr ${est}_sr_p2 "$est block-sparse, bf16 + SR: P=2 offloaded at 2 threads vs 1 rank"
  sparse_run ${est}_words $est 1 1 1 1 "" "${BF16_SR[@]}" '  gemm_inputs: storage'
  sparse_run ${est}_words_p2 $est 2 2 2 1 "" "${BF16_SR[@]}" '  gemm_inputs: storage' "${OFFLOAD[@]}"
  same ${est}_words ${est}_words_p2 "$est block-sparse, bf16 GEMM inputs: P=2 offloaded at 2 threads vs 1 rank"
  sparse_run ${est}_m $est 1 1 1 1 momentum
  sparse_run ${est}_m_p2 $est 2 2 2 1 momentum "${OFFLOAD[@]}"
  same ${est}_m ${est}_m_p2 "$est block-sparse with momentum: P=2 offloaded at 2 threads vs 1 rank"
  differ ${est}_m ${est}_ref "$est block-sparse: the momentum changed nothing"
  pass "$est K=1 of 2 blocks: 1 rank == P=2 (own θ, shared sliced master), offloaded, P2xD2 == D2, bf16+SR (fp32 and bf16 GEMM inputs) and momentum P=2 offloaded == 1 rank ($(cat ${est}_ref.digest))"

  for run in ref sr m; do replayed ${est}_$run; done
  replayed ${est}_p2d2
  pass "$est block-sparse: replay == the run for fp32, bf16 + SR, momentum, P2xD2"

  # The dense run, without the key and with K = 0 written out: one digest, not the sparse one's.
  QUERIES=$(queries_of $est) demo_deck ${est}_dense "$STEPS" 1 1
  mapfile -t lines < <(estimator_lines $est)
  optim_lines ${est}_dense "${lines[@]}" '  weight_decay: 0.01'
  sed "s|dir: ${est}_dense|dir: ${est}_zero|" ${est}_dense.yaml > ${est}_zero.yaml
  optim_lines ${est}_zero '  perturbed_blocks: 0'
  for run in dense zero; do
    "$DISTZO" run ${est}_$run.yaml > ${est}_$run.log 2>&1 || { cat ${est}_$run.log; fail "${est}_$run failed"; }
    digest ${est}_$run/ckpt-$(printf %06d "$STEPS").h5 > ${est}_$run.digest
  done
  same ${est}_dense ${est}_zero "$est: perturbed_blocks 0 written out vs the key left out"
  differ ${est}_dense ${est}_ref "$est: perturbed_blocks 1 changed nothing"
  pass "$est: perturbed_blocks 0 == no key ($(cat ${est}_dense.digest)); K = 1 differs"
done

# 3 + resume + 3 == 6 straight, and a log-only checkpoint resumes (spsa with a momentum).
QUERIES=2 demo_deck half 3 1 1
sed -i "s|dir: half|dir: resumed|" half.yaml
mapfile -t lines < <(estimator_lines spsa)
optim_lines half "${lines[@]}" "${SPARSE[@]}" '  weight_decay: 0.01' "${MOMENTUM[@]}"
"$DISTZO" run half.yaml > half.log 2>&1 || { cat half.log; fail "the first 3 steps failed"; }
QUERIES=2 demo_deck resumed "$STEPS" 1 1 'checkpoint:' '  resume: latest'
optim_lines resumed "${lines[@]}" "${SPARSE[@]}" '  weight_decay: 0.01' "${MOMENTUM[@]}"
"$DISTZO" run resumed.yaml > resumed.log 2>&1 || { cat resumed.log; fail "the resume failed"; }
grep -q "resuming from resumed/ckpt-000003.h5" resumed.log || fail "did not resume from step 3: $(head -1 resumed.log)"
digest resumed/ckpt-$(printf %06d "$STEPS").h5 > resumed.digest
same spsa_m resumed "spsa block-sparse with momentum, resumed after 3 steps vs uninterrupted"

QUERIES=2 demo_deck logged "$STEPS" 1 1 'checkpoint:' '  interval: 0' '  log_interval: 2'
optim_lines logged "${lines[@]}" "${SPARSE[@]}" '  weight_decay: 0.01' "${MOMENTUM[@]}"
"$DISTZO" run logged.yaml > logged.log 2>&1 || { cat logged.log; fail "the logged run failed"; }
rm logged/ckpt-$(printf %06d "$STEPS").h5
sed -i 's|^checkpoint:$|checkpoint:\n  resume: latest|' logged.yaml
OPENBLAS_NUM_THREADS=2 "$DISTZO" run logged.yaml > logged2.log 2>&1 || { cat logged2.log; fail "the log-only resume failed"; }
grep -q "resuming from logged/log-000004.h5" logged2.log || fail "did not resume from the log-only file: $(head -2 logged2.log)"
digest logged/ckpt-$(printf %06d "$STEPS").h5 > logged.digest
same spsa_m logged "spsa block-sparse with momentum, θ rebuilt from the base model and log-000004.h5, then 2 steps"
pass "block-sparse with momentum: 3 + resume + 3 == 6 straight; a log-only checkpoint rebuilds θ ($(cat spsa_m.digest))"

# What names it.
grep -q "perturbing 1 of 2 blocks a step" spsa_ref/run.log || fail "run.log's header: $(head -1 spsa_ref/run.log)"
"$DISTZO" inspect spsa_ref/ckpt-000006.h5 > inspect.out
grep -q "perturbing 1 of 2 blocks a step" inspect.out || fail "inspect: $(grep training inspect.out)"
"$DISTZO" plan spsa_ref.yaml > plan.out 2>&1 || { cat plan.out; fail "plan failed"; }
grep -q "block-sparse 1 of 2 blocks a step (optim.perturbed_blocks)" plan.out || fail "plan: $(cat plan.out)"
"$DISTZO" plan spsa_offload.yaml > plan_off.out 2>&1 || { cat plan_off.out; fail "plan failed"; }
"$DISTZO" plan spsa_dense.yaml > plan_dense.out 2>&1 || { cat plan_dense.out; fail "plan failed"; }
sed -i 's|^placement:$|placement:\n  mode: offload\n  resident_blocks: 0|' spsa_dense.yaml
"$DISTZO" plan spsa_dense.yaml > plan_dense_off.out 2>&1 || { cat plan_dense_off.out; fail "plan failed"; }
grep -q "block-sparse" plan_dense.out && fail "a dense plan names block-sparse steps"
up=$(grep '^moved per step' plan_off.out)
up_dense=$(grep '^moved per step' plan_dense_off.out)
[ "$up" != "$up_dense" ] || fail "plan: block-sparse moves as much to the host as dense: $up"
pass "run.log's header, inspect and plan name the block-sparse steps; plan's write-back shrinks"

# Refusals: K >= B, and a resume that changes K (even when allowed).
QUERIES=2 demo_deck too_many 2 1 1
optim_lines too_many '  perturbed_blocks: 2'
if "$DISTZO" run too_many.yaml > too_many.log 2>&1; then fail "K = B ran"; fi
grep -q "optim.perturbed_blocks: 2 blocks a step, but the model has 2 decoder blocks" too_many.log ||
  fail "K = B message: $(cat too_many.log)"
sed 's|perturbed_blocks: 1|perturbed_blocks: 0|' resumed.yaml > changed.yaml
sed -i "s|steps: $STEPS|steps: 8|" changed.yaml
if "$DISTZO" run changed.yaml > changed.log 2>&1; then fail "a resume changed perturbed_blocks"; fi
grep -q "never changes within a run, even when checkpoint.allow_changes lists it" changed.log ||
  fail "perturbed_blocks change message: $(cat changed.log)"
pass "K >= B and a resume that changes optim.perturbed_blocks are refused"
