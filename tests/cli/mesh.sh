#!/usr/bin/env bash
# The 2D mesh under mpiexec (DESIGN.md invariants 3, 4, 6): perturbation
# parallelism reproduces a single rank bit for bit; data parallelism keeps the
# replicas identical and matches a single rank with the same global batch;
# mismatched meshes and diverged replicas stop with clear errors. Every rank
# of these runs is on one node, so placement.share_host_master (auto) puts
# one θ master in shared memory and slices the update (Placement II); the
# unshared, replicated path is run explicitly next to it.
source "$(dirname "$0")/lib.sh" "$@"
STEPS=20
mesh() {  # mesh NAME P D RANKS [extra lines]: run the deck on RANKS ranks
  local name=$1 p=$2 d=$3 n=$4; shift 4
  deck "$name" "$STEPS" "$name" 'parallel:' "  perturbation: $p" "  data: $d" '  check_interval: 1' "$@"
  "$MPIEXEC" -n "$n" "$DISTZO" run "$name.yaml" > "$name.log" 2>&1 || { cat "$name.log"; fail "$name failed"; }
}
ckpt() { echo "$1/ckpt-$(printf %06d "$STEPS").h5"; }
final() { digest "$(ckpt "$1")"; }

MICRO_BATCH=16 mesh single 1 1 1
MICRO_BATCH=16 mesh p2 2 1 2
grep -q "shared by the node's 2 ranks (one copy per node), each updating and perturbing 1/2 of every group, slices exchanged by shared_memory" p2/run.log ||
  fail "P=2 on one node did not share the host master: $(grep placement p2/run.log)"
[ "$(final p2)" = "$(final single)" ] || fail "P=2 differs from 1 rank"
pass "P=2 on 2 ranks (shared master, sliced) == 1 rank after $STEPS steps ($(final single))"
grep -q "checkpoint $(ckpt p2) (written by the node's 2 ranks together, parallel HDF5)" p2/run.log ||
  fail "the P=2 checkpoint was not written in parallel: $(grep checkpoint p2/run.log)"
same_datasets "$(ckpt single)" "$(ckpt p2)" || fail "P=2's parallel checkpoint differs from 1 rank's"
pass "P=2's checkpoint, written by both ranks through parallel HDF5, has 1 rank's datasets"
MICRO_BATCH=16 mesh p2_mpi 2 1 2 'placement:' '  exchange: mpi'
grep -q "slices exchanged by mpi" p2_mpi/run.log || fail "exchange: mpi not used"
[ "$(final p2_mpi)" = "$(final single)" ] || fail "P=2 with the MPI slice exchange differs from 1 rank"
MICRO_BATCH=16 mesh p2_replicated 2 1 2 'placement:' '  share_host_master: false'
grep -q "shared by" p2_replicated/run.log && fail "share_host_master: false still shared"
[ "$(final p2_replicated)" = "$(final single)" ] || fail "P=2 unshared differs from 1 rank"
pass "P=2 with the MPI exchange, and P=2 unshared (every rank the whole θ) == 1 rank"
for exchange in shared_memory mpi; do
  MICRO_BATCH=16 mesh p2_offload_$exchange 2 1 2 'placement:' '  mode: offload' "  exchange: $exchange"
  [ "$(final p2_offload_$exchange)" = "$(final single)" ] || fail "offload + shared master + P=2 ($exchange) differs from resident on 1 rank"
done
pass "offload + shared master + slices, P=2 (shared_memory and mpi exchange) == resident on 1 rank"

# D=2 halves the micro-batch: the same global batch of 16 examples.
MICRO_BATCH=8 mesh d2 1 2 2
MICRO_BATCH=8 mesh d2_replicated 1 2 2 'placement:' '  share_host_master: false'
[ "$(final d2)" = "$(final d2_replicated)" ] || fail "D=2 shared differs from D=2 unshared"
pass "D=2 with a shared master == D=2 unshared ($(final d2))"
like_one_rank d2 single "D=2"
pass "D=2: replicas identical at every step (check_interval 1); losses within 1e-6 of 1 rank at step 1 and 1e-5 after, g within 1e-3"

MICRO_BATCH=8 mesh p2d2 2 2 4
[ "$(final p2d2)" = "$(final d2)" ] || fail "P=2 x D=2 on 4 ranks differs from D=2 on 2 ranks"
# The same run written by one rank (D=2 replicated) and by four together.
same_datasets "$(ckpt d2_replicated)" "$(ckpt p2d2)" ||
  fail "the P=2 x D=2 checkpoint (4 ranks, parallel HDF5) differs from D=2's written by rank 0"
pass "the P=2 x D=2 checkpoint, written by 4 ranks through parallel HDF5, has the datasets of D=2's written by rank 0"
pass "P=2 x D=2 on 4 ranks == D=2 on 2 ranks ($(final d2))"

QUERIES=2 MICRO_BATCH=16 mesh q2 1 1 1
QUERIES=2 MICRO_BATCH=16 mesh q2p4 4 1 4
[ "$(final q2p4)" = "$(final q2)" ] || fail "q=2, P=4 differs from q=2 on 1 rank"
pass "q=2 with P=4 == q=2 on 1 rank ($(final q2))"

# Errors: a mesh that does not match the ranks; P not dividing 2q.
deck wrong 4 wrong 'parallel:' '  perturbation: 1' '  data: 1'
if "$MPIEXEC" -n 2 "$DISTZO" run wrong.yaml > wrong.log 2>&1; then fail "a 1x1 mesh ran on 2 ranks"; fi
grep -q "does not match the 2 MPI ranks" wrong.log || fail "mesh mismatch message: $(cat wrong.log)"
[ ! -e wrong ] || fail "the mismatched run created its output directory"
pass "a 1x1 mesh on 2 ranks is rejected"
deck odd 4 odd 'parallel:' '  perturbation: 4' '  data: 1'
if "$MPIEXEC" -n 4 "$DISTZO" run odd.yaml > odd.log 2>&1; then fail "P=4 with q=1 ran"; fi
grep -q "P must divide the 2q evaluations" odd.log || fail "P/2q message: $(cat odd.log)"
pass "P=4 with q=1 (2q=2) is rejected"

# Divergence guard: rank 1 corrupts one weight; the check must stop the run.
# Replicated θ: its own copy, seen as a digest that differs from rank 0's.
deck diverge 4 diverge 'parallel:' '  perturbation: 1' '  data: 2' '  check_interval: 2' \
  'placement:' '  share_host_master: false'
if "$MPIEXEC" -n 2 "$DISTZO" run diverge.yaml --debug-corrupt-rank=1 > diverge.log 2>&1; then
  fail "a corrupted replica went unnoticed"
fi
grep -q "replicas diverged after step 2: the parameter digest of rank(s) 1 differs from rank 0's" diverge.log ||
  fail "divergence message: $(cat diverge.log)"
pass "a diverged replica stops the run, naming rank 1"
# Shared master: rank 1 writes into rank 0's slice; every rank's digest is
# the same (one θ), so the slice check must catch it.
deck overwrite 4 overwrite 'parallel:' '  perturbation: 1' '  data: 2' '  check_interval: 2'
if "$MPIEXEC" -n 2 "$DISTZO" run overwrite.yaml --debug-corrupt-rank=1 > overwrite.log 2>&1; then
  fail "a write into another rank's slice went unnoticed"
fi
grep -q "shared θ master corrupted after step 2: the slice of rank(s) 0 changed after its owner wrote it" overwrite.log ||
  fail "slice guard message: $(cat overwrite.log)"
pass "a rank writing into rank 0's slice of the shared master stops the run, naming rank 0"

# A checkpoint resumes under another layout. P=2 is exact, so 10 steps on a
# P=2 mesh + 10 resumed on 1 rank equal 20 straight on 1 rank, bit for bit.
STEPS=10 MICRO_BATCH=16 mesh half_p2 2 1 2
deck rest_1 20 half_p2 'checkpoint:' '  resume: latest'
"$DISTZO" run rest_1.yaml > rest_1.log 2>&1 || { cat rest_1.log; fail "resume on 1 rank failed"; }
grep -q "resuming from half_p2/ckpt-000010.h5" rest_1.log || fail "did not resume from step 10"
[ "$(final half_p2)" = "$(final single)" ] || fail "P=2 checkpoint resumed on 1 rank differs from 1 rank straight"
pass "a P=2 checkpoint resumes on 1 rank, bit-identical to 20 steps straight"

# ... and a P=2 x D=2 checkpoint resumes on D=2 (2 ranks): the same run.
STEPS=10 MICRO_BATCH=8 mesh half_4 2 2 4
MICRO_BATCH=8 deck rest_d2 20 half_4 'parallel:' '  data: 2' 'checkpoint:' '  resume: latest'
"$MPIEXEC" -n 2 "$DISTZO" run rest_d2.yaml > rest_d2.log 2>&1 || { cat rest_d2.log; fail "resume on D=2 failed"; }
[ "$(final half_4)" = "$(final d2)" ] || fail "P=2 x D=2 checkpoint resumed on D=2 differs from D=2 straight"
pass "a P=2 x D=2 checkpoint resumes on D=2 (2 ranks), bit-identical to D=2 straight"
