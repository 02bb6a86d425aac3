#!/usr/bin/env bash
# θ stored in bf16 (precision.storage, docs/decks.md) on the demo model, a
# short run: the digest with stochastic rounding is the same on one rank at
# OPENBLAS_NUM_THREADS=2 and 1, under mpiexec with P=2 (the node's ranks
# sharing one sliced master of words, and each rank its own θ) and with
# every block offloaded (2-byte slots, half the bytes moved), also with a
# shared master; D=2 at 1 and 2 threads and P2xD2 (shared master, and own
# offloaded θ with w one at a time) agree; a
# resume mid-run continues the uninterrupted run bit for bit; stochastic
# rounding, round to nearest and float32 give three different digests; every
# value of the final checkpoint is a bf16 value; a resume that changes
# precision.storage is refused unless checkpoint.allow_changes names it.
source "$(dirname "$0")/lib.sh" "$@"
STEPS=8
MICRO_BATCH=16
BF16_SR=('precision:' '  storage: bf16' '  rounding: stochastic')


demo_run sr_t1 1 1 1 1 "${BF16_SR[@]}"
grep -qF "precision: θ stored in bf16 (2 bytes per parameter), updates rounded stochastically" sr_t1/run.log ||
  fail "run.log does not say how θ is stored: $(grep -i precision sr_t1/run.log)"
"$DISTZO" inspect sr_t1/ckpt-$(printf %06d "$STEPS").h5 > inspect.out
grep -qF "storage       θ held in bf16, updates rounded stochastically" inspect.out ||
  fail "inspect does not say how θ was stored: $(head -5 inspect.out)"
grep -qF "storage: bf16" sr_t1/deck.resolved.yaml && grep -qF "rounding: stochastic" sr_t1/deck.resolved.yaml ||
  fail "the resolved deck lacks the precision keys"
demo_run sr_t2 2 1 1 1 "${BF16_SR[@]}"
demo_run sr_p2 1 2 2 1 "${BF16_SR[@]}"
same sr_t1 sr_t2 "bf16 + SR, 1 rank at 1 and 2 GEMM threads"
same sr_t1 sr_p2 "bf16 + SR, P=2 (shared master) vs 1 rank"
grep -q "shared by the node's 2 ranks" sr_p2/run.log || fail "P=2 did not share θ: $(grep placement sr_p2/run.log)"
demo_run sr_p2_own 2 2 2 1 "${BF16_SR[@]}" 'placement:' '  share_host_master: false'
same sr_t1 sr_p2_own "bf16 + SR, P=2 (each rank its own θ) at 2 threads vs 1 rank"
demo_run sr_p2_offload 1 2 2 1 "${BF16_SR[@]}" 'placement:' '  mode: offload' '  resident_blocks: 0'
same sr_t1 sr_p2_offload "bf16 + SR, P=2, shared master of offloaded blocks vs 1 rank"
demo_run sr_offload 2 1 1 1 "${BF16_SR[@]}" 'placement:' '  mode: offload' '  resident_blocks: 0'
same sr_t1 sr_offload "bf16 + SR, every block offloaded at 2 threads vs resident at 1"
demo_run f32_offload 1 1 1 1 'placement:' '  mode: offload' '  resident_blocks: 0'
moved() { sed -n 's/.*last step moved [^(]* (\([0-9]*\) B) to the device.*/\1/p' "$1/run.log"; }
[ -n "$(moved sr_offload)" ] && [ "$(( 2 * $(moved sr_offload) ))" = "$(moved f32_offload)" ] ||
  fail "bf16 offload moved $(moved sr_offload) B per step, fp32 $(moved f32_offload) B: not half"
pass "bf16 + SR: 1 rank at 1 and 2 threads, P=2 (shared and not, resident and offloaded) and offloaded give $(cat sr_t1.digest); offload moves $(moved sr_offload) B per step (fp32: $(moved f32_offload) B)"

demo_run sr_d2t1 1 2 1 2 "${BF16_SR[@]}"
demo_run sr_d2t2 2 2 1 2 "${BF16_SR[@]}"
same sr_d2t1 sr_d2t2 "bf16 + SR, D=2 at 1 and 2 GEMM threads per rank"
demo_run sr_p2d2 2 4 2 2 "${BF16_SR[@]}"
same sr_d2t1 sr_p2d2 "bf16 + SR, P2xD2 (a shared master per node) vs D=2"
demo_run sr_p2d2_own 1 4 2 2 "${BF16_SR[@]}" 'placement:' '  mode: offload' '  resident_blocks: 1' \
  '  share_host_master: false' '  perturbed_weights: one_at_a_time'
same sr_d2t1 sr_p2d2_own "bf16 + SR, P2xD2 (each rank its own θ, offloaded, w one at a time) vs D=2"
pass "bf16 + SR: D=2 at 1 and 2 threads per rank, P2xD2 shared and P2xD2 own offloaded one_at_a_time give $(cat sr_d2t1.digest)"

demo_run rn 1 1 1 1 'precision:' '  storage: bf16' '  rounding: nearest'
demo_run f32 1 1 1 1
differ sr_t1 rn "stochastic rounding vs round to nearest"
differ sr_t1 f32 "bf16 vs fp32"
differ rn f32 "bf16 round to nearest vs fp32"
pass "bf16 + SR $(cat sr_t1.digest), bf16 + nearest $(cat rn.digest), fp32 $(cat f32.digest): all different"

# Every value θ ends with is a bf16 value: its float32 has no bits below
# bf16's 7 mantissa bits (in C's %a: at most two hex digits after the point,
# the second even).
for dataset in $(h5dump -n sr_t1/ckpt-$(printf %06d "$STEPS").h5 | awk '$1 == "dataset" && $2 !~ /^\/distzo\// { print $2 }'); do
  h5dump -A 0 -d "$dataset" -m '%a' sr_t1/ckpt-$(printf %06d "$STEPS").h5
done | awk '/^ *\([0-9,]*\):/ { for (i = 2; i <= NF; i++) { v = $i; sub(/,$/, "", v); n++
    if (v !~ /^-?0x[01](\.[0-9a-f]+)?p[-+][0-9]+$/) { bad++; if (!w) w = v; continue }
    f = v; sub(/^-?0x[01]\.?/, "", f); sub(/p.*/, "", f); sub(/0+$/, "", f)
    if (length(f) > 2 || (length(f) == 2 && index("13579bdf", substr(f, 2, 1)))) { bad++; if (!w) w = v } } }
  END { if (bad || n < 900000) { print n " values, " bad + 0 " not bf16 (first " w ")"; exit 1 } }' ||
  fail "the bf16 run's checkpoint holds values that are not bf16"
pass "every value of the bf16 run's final checkpoint is a bf16 value"

# A resume at step 4 continues the run of 8 steps bit for bit (the update
# flushed before the checkpoint rounds with the words of the fused one).
demo_resume 4 "${BF16_SR[@]}"
same resumed sr_t1 "bf16 + SR, 4 steps + resume + 4 steps vs 8 straight"
pass "bf16 + SR: 4 + resume + 4 steps == 8 steps straight"

# A resume into another storage is refused unless allow_changes names it
# (a deck without precision.storage would keep the checkpoint's bf16).
demo_deck to_f32 12 1 1 'precision:' '  storage: fp32' 'checkpoint:' '  resume: latest'
sed -i 's|dir: to_f32|dir: resumed|' to_f32.yaml
set +e; "$DISTZO" run to_f32.yaml > to_f32.log 2>&1; status=$?; set -e
[ "$status" -ne 0 ] || fail "a resume changing precision.storage was accepted"
grep -qF "precision.storage: bf16 in the checkpoint, fp32 in the deck" to_f32.log &&
  grep -qF "checkpoint.allow_changes" to_f32.log || fail "the refusal does not say what to do: $(cat to_f32.log)"
demo_deck to_f32 12 1 1 'precision:' '  storage: fp32' 'checkpoint:' '  resume: latest' '  allow_changes: [precision.storage]'
sed -i 's|dir: to_f32|dir: resumed|' to_f32.yaml
"$DISTZO" run to_f32.yaml > to_f32.log 2>&1 || { cat to_f32.log; fail "the allowed change of storage failed"; }
grep -qF "resumed with precision.storage: bf16 in the checkpoint, fp32 in the deck (checkpoint.allow_changes)" resumed/run.log ||
  fail "run.log does not record the change of storage: $(grep -i resumed resumed/run.log)"
grep -qF "stored in bf16, is stored in fp32 from here on (exact)" resumed/run.log ||
  fail "run.log does not say θ is stored anew: $(grep -i stored resumed/run.log)"
pass "a resume changing precision.storage: refused, and with checkpoint.allow_changes continued and logged"
