#!/usr/bin/env bash
# optim.momentum / optim.history (a momentum rebuilt from the seed log's last
# h rows, docs/perturbation.md) on the demo model, for both estimators: the
# digest of one resident rank at OPENBLAS_NUM_THREADS=1 is the digest at 2
# threads with P = 2 on each rank's own θ, P = 2 on a node-shared sliced
# master, every block offloaded (K = 0), and P = 2 x D = 2 equals D = 2;
# bf16 with stochastic rounding agrees between one rank and P = 2
# offloaded. Momentum 0 written out is the run without the keys; a momentum
# run differs from it. 3 steps + resume + 3 == 6 straight (digest and
# metrics.csv) with h = 4, so the updates after the resume use rows from
# before it. run.log, inspect and plan name the momentum; a resume that
# changes it is refused even when allowed.
source "$(dirname "$0")/lib.sh" "$@"
STEPS=6
MICRO_BATCH=16
MOMENTUM=('  momentum: 0.9' '  history: 4')


# momentum_run NAME ESTIMATOR THREADS RANKS P D [extra lines]: a momentum run, digest in NAME.digest.
momentum_run() {
  local name=$1 estimator=$2 threads=$3 ranks=$4 p=$5 d=$6
  shift 6
  QUERIES=$(queries_of "$estimator") demo_deck "$name" "$STEPS" "$p" "$d" "$@"
  mapfile -t lines < <(estimator_lines "$estimator")
  optim_lines "$name" "${lines[@]}" "${MOMENTUM[@]}"
  local launch=()
  [ "$ranks" -gt 1 ] && launch=("$MPIEXEC" -n "$ranks")
  OPENBLAS_NUM_THREADS=$threads "${launch[@]}" "$DISTZO" run "$name.yaml" > "$name.log" 2>&1 ||
    { cat "$name.log"; fail "$name failed"; }
  digest "$name/ckpt-$(printf %06d "$STEPS").h5" > "$name.digest"
}

OFFLOAD=('placement:' '  mode: offload' '  resident_blocks: 0')
BF16_SR=('precision:' '  storage: bf16' '  rounding: stochastic')
for est in spsa one_sided; do
  q=$(queries_of $est)
  momentum_run ${est}_ref $est 1 1 1 1
  grep -q "momentum: 0.9" ${est}_ref/deck.resolved.yaml || fail "the resolved deck lacks optim.momentum"
  momentum_run ${est}_p2_own $est 2 2 2 1 'placement:' '  share_host_master: false'
  same ${est}_ref ${est}_p2_own "$est momentum, P=2 each rank its own θ at 2 threads vs 1 rank at 1"
  momentum_run ${est}_p2_shared $est 2 2 2 1
  grep -q "shared by the node's 2 ranks" ${est}_p2_shared/run.log || fail "P=2 did not share θ: $(grep placement ${est}_p2_shared/run.log)"
  same ${est}_ref ${est}_p2_shared "$est momentum, P=2 on a node-shared sliced master vs 1 rank"
  momentum_run ${est}_offload $est 2 1 1 1 "${OFFLOAD[@]}"
  same ${est}_ref ${est}_offload "$est momentum, every block offloaded (K=0) at 2 threads vs resident at 1"
  MICRO_BATCH=8 momentum_run ${est}_d2 $est 1 2 1 2
  MICRO_BATCH=8 momentum_run ${est}_p2d2 $est 2 4 2 2
  same ${est}_d2 ${est}_p2d2 "$est momentum, P=2 x D=2 on 4 ranks vs D=2 on 2"
  momentum_run ${est}_sr $est 1 1 1 1 "${BF16_SR[@]}"
  momentum_run ${est}_sr_p2 $est 2 2 2 1 "${BF16_SR[@]}" "${OFFLOAD[@]}"
  same ${est}_sr ${est}_sr_p2 "$est momentum, bf16 + SR: P=2 offloaded at 2 threads vs 1 rank"
  differ ${est}_sr ${est}_ref "$est momentum: bf16 gave the fp32 digest"
  pass "$est q=$q, momentum 0.9 over h=4: 1 rank == P=2 (own θ, shared sliced master), offloaded K=0, P2xD2 == D2, bf16+SR P=2 offloaded == 1 rank ($(cat ${est}_ref.digest))"

  # The plain run, without the keys and with momentum 0 written out: one
  # digest, and not the momentum run's.
  QUERIES=$q demo_deck ${est}_plain "$STEPS" 1 1
  mapfile -t lines < <(estimator_lines $est)
  optim_lines ${est}_plain "${lines[@]}"
  sed "s|dir: ${est}_plain|dir: ${est}_zero|" ${est}_plain.yaml > ${est}_zero.yaml
  optim_lines ${est}_zero '  momentum: 0' '  history: 1'
  for run in plain zero; do
    "$DISTZO" run ${est}_$run.yaml > ${est}_$run.log 2>&1 || { cat ${est}_$run.log; fail "${est}_$run failed"; }
    digest ${est}_$run/ckpt-$(printf %06d "$STEPS").h5 > ${est}_$run.digest
  done
  same ${est}_plain ${est}_zero "$est: momentum 0 and history 1 written out vs the keys left out"
  differ ${est}_plain ${est}_ref "$est: momentum 0.9 changed nothing"
  pass "$est: momentum 0 == no keys ($(cat ${est}_plain.digest)); momentum 0.9 differs"

  # 3 + resume + 3 == 6 straight; the updates of steps 4 to 6 use rows from before the resume.
  QUERIES=$q demo_deck ${est}_half 3 1 1
  sed -i "s|dir: ${est}_half|dir: ${est}_resumed|" ${est}_half.yaml
  optim_lines ${est}_half "${lines[@]}" "${MOMENTUM[@]}"
  "$DISTZO" run ${est}_half.yaml > ${est}_half.log 2>&1 || { cat ${est}_half.log; fail "the first 3 steps failed"; }
  QUERIES=$q demo_deck ${est}_resumed "$STEPS" 1 1 'checkpoint:' '  resume: latest'
  optim_lines ${est}_resumed "${lines[@]}" "${MOMENTUM[@]}"
  "$DISTZO" run ${est}_resumed.yaml > ${est}_resumed.log 2>&1 || { cat ${est}_resumed.log; fail "the resume failed"; }
  grep -q "resuming from ${est}_resumed/ckpt-000003.h5" ${est}_resumed.log || fail "did not resume from step 3: $(head -1 ${est}_resumed.log)"
  digest ${est}_resumed/ckpt-$(printf %06d "$STEPS").h5 > ${est}_resumed.digest
  same ${est}_ref ${est}_resumed "$est momentum, resumed after 3 steps (h=4) vs uninterrupted"
  cmp <(cut -d, -f1-7 ${est}_ref/metrics.csv) <(cut -d, -f1-7 ${est}_resumed/metrics.csv) ||
    fail "$est momentum: metrics.csv of the resumed run differs from the straight run's"
  [ "$(grep -c '^[0-9]' ${est}_resumed/metrics.csv)" = "$STEPS" ] || fail "$est: metrics.csv rows after the resume"
  pass "$est momentum: 3 + resume + 3 == 6 straight (digest and metrics.csv)"
done

# What names the momentum.
grep -q "spsa q=2 with momentum 0.9 over h=4 steps" spsa_ref/run.log || fail "run.log's header: $(head -1 spsa_ref/run.log)"
grep -q "spsa q=2, " spsa_plain/run.log || fail "a plain run's header names a momentum: $(head -1 spsa_plain/run.log)"
"$DISTZO" inspect spsa_ref/ckpt-000006.h5 > inspect.out
grep -q "spsa q = 2 with momentum 0.9 over h = 4 steps" inspect.out || fail "inspect: $(grep training inspect.out)"
"$DISTZO" plan spsa_ref.yaml > plan.out 2>&1 || { cat plan.out; fail "plan failed"; }
grep -q "z a step     8 per element of θ for the update (h x q = 4 x 2: momentum 0.9 over the last 4 steps' directions) + 2 for the perturbation" plan.out ||
  fail "plan: $(grep -A1 workload plan.out)"
"$DISTZO" plan spsa_plain.yaml > plan_plain.out 2>&1 || { cat plan_plain.out; fail "plan failed"; }
grep -q "z a step     2 per element of θ for the update (h x q = 1 x 2: the step's own directions) + 2 for the perturbation" plan_plain.out ||
  fail "plan, plain: $(grep -A1 workload plan_plain.out)"
pass "run.log's header, inspect and plan name the momentum and its z streams"

# A resume may not change the momentum or the history: refused with the reason, and a deck
# that lists them in allow_changes is refused as it is read.
for change in 's|momentum: 0.9|momentum: 0.5|' 's|history: 4|history: 3|'; do
  sed "$change" spsa_resumed.yaml > changed.yaml
  if "$DISTZO" run changed.yaml > changed.log 2>&1; then fail "a resume changed the momentum ($change)"; fi
  grep -q "never changes within a run, even when checkpoint.allow_changes lists it" changed.log &&
    ! grep -q "or list the keys changed on purpose" changed.log || fail "momentum change message: $(cat changed.log)"
  printf '  allow_changes: [optim.momentum, optim.history]\n' >> changed.yaml
  if "$DISTZO" run changed.yaml > changed.log 2>&1; then fail "a deck allowing a momentum change ran ($change)"; fi
  grep -q "checkpoint.allow_changes: optim.momentum never changes within a run" changed.log ||
    fail "allow_changes of the momentum: $(cat changed.log)"
done
pass "a resume that changes optim.momentum or optim.history is refused, even in allow_changes"
