#!/usr/bin/env bash
# Placement end to end (DESIGN.md invariant 6; docs/placement.md): offloaded
# runs give the resident run's digest and the same losses and g at every
# step, for both tasks and q=2, with K = 0, 1 and L-1 resident blocks, on one
# rank and under the mesh; checkpoints resume across placements; the device
# high-water mark (Kokkos Tools) stays flat with depth when offloaded and
# grows with it when resident; `distzo plan` predicts every measured peak
# within 5% and the bytes moved per step exactly.
source "$(dirname "$0")/lib.sh" "$@"
STEPS=20
"$DISTZO" make-model deep.h5 --layers 4 --hidden 32 --heads 4 --ffn 64 --vocab 96 --positions 32 --seed 5 >/dev/null
"$DISTZO" make-synthetic lm.h5 --task causal_lm --examples 64 --seq-len 12 --vocab 96 --seed 3 >/dev/null

# run NAME TRAIN [placement lines...]: 20 steps of the 4-layer model; offloaded
# runs poison released slots, so a use after release would be a NaN loss.
run() {
  local name=$1 train=$2; shift 2
  deck "$name" "$STEPS" "$name" 'checkpoint:' '  interval: 10' "$@"
  sed -i "s|path: model.h5|path: ${MODEL:-deep.h5}|; s|train: train.h5|train: $train|; s|eval: eval.h5|eval: $train|" "$name.yaml"
  local poison=""
  grep -q "mode: offload" "$name.yaml" && poison=--debug-poison-slots
  "${LAUNCH[@]}" "$DISTZO" run "$name.yaml" $poison > "$name.log" 2>&1 || { cat "$name.log"; fail "$name failed"; }
}
final() { digest "$1/ckpt-$(printf %06d "$STEPS").h5"; }
same_columns() {  # same_columns A B: identical loss, loss_plus, loss_minus and g at every step
  for c in loss loss_plus loss_minus g; do
    cmp -s <(column "$1/metrics.csv" $c) <(column "$2/metrics.csv" $c) || fail "$2: column $c differs from $1"
  done
}
offload() { OFF=('placement:' '  mode: offload' "  resident_blocks: $1" "  prefetch: ${2:-1}"); }

LAUNCH=()
for task in classification causal_lm q2; do
  train=train.h5; q=1
  [ "$task" = causal_lm ] && train=lm.h5
  [ "$task" = q2 ] && q=2
  QUERIES=$q run "res_$task" "$train"
  for k in 0 1 3; do
    offload "$k" $((k % 2 + 1))
    QUERIES=$q run "off${k}_$task" "$train" "${OFF[@]}"
    [ "$(final "off${k}_$task")" = "$(final "res_$task")" ] || fail "offload K=$k ($task) differs from resident"
    same_columns "res_$task" "off${k}_$task"
  done
  pass "$task: offload with K = 0, 1, 3 of 4 blocks == resident (digest $(final "res_$task"), losses and g at all $STEPS steps)"
done
grep -q "placement: offload, block 0 kept in device memory, 3 streamed from host memory through 3 device slots (prefetch 2)" off1_q2/run.log ||
  fail "the run log does not describe the placement: $(grep placement: off1_q2/run.log)"

# K at or above the model's blocks is resident, and the log says so.
offload 9
run beyond train.h5 "${OFF[@]}"
grep -q "resident_blocks = 9 >= the model's 4 blocks: every block stays in device memory" beyond/run.log ||
  fail "K >= L: $(grep placement: beyond/run.log)"
[ "$(final beyond)" = "$(final res_classification)" ] || fail "K >= L differs from resident"
pass "resident_blocks beyond the model means resident, said in run.log"

# Under the mesh: P=2 and D=2 (half the micro-batch, same global batch), offloaded == resident.
LAUNCH=("$MPIEXEC" -n 2)
MICRO_BATCH=16 run mesh_p2_res train.h5 'parallel:' '  perturbation: 2'
offload 1
MICRO_BATCH=16 run mesh_p2_off train.h5 'parallel:' '  perturbation: 2' "${OFF[@]}"
[ "$(final mesh_p2_off)" = "$(final mesh_p2_res)" ] || fail "P=2 offloaded differs from P=2 resident"
[ "$(final mesh_p2_off)" = "$(final res_classification)" ] || fail "P=2 offloaded differs from 1 rank resident"
same_columns mesh_p2_res mesh_p2_off
MICRO_BATCH=8 run mesh_d2_res train.h5 'parallel:' '  data: 2'
offload 0
MICRO_BATCH=8 run mesh_d2_off train.h5 'parallel:' '  data: 2' "${OFF[@]}"
[ "$(final mesh_d2_off)" = "$(final mesh_d2_res)" ] || fail "D=2 offloaded differs from D=2 resident"
same_columns mesh_d2_res mesh_d2_off
pass "P=2 and D=2 offloaded == their resident runs (and P=2 == 1 rank)"
LAUNCH=()

# A checkpoint written resident resumes offloaded, and the reverse.
STEPS=10 run half_res train.h5
STEPS=10 run half_off train.h5 "${OFF[@]}"
deck rest_off "$STEPS" half_res 'checkpoint:' '  resume: latest' "${OFF[@]}"
deck rest_res "$STEPS" half_off 'checkpoint:' '  resume: latest'
for r in rest_off rest_res; do
  sed -i 's|path: model.h5|path: deep.h5|' "$r.yaml"
  "$DISTZO" run "$r.yaml" > "$r.log" 2>&1 || { cat "$r.log"; fail "$r failed"; }
  grep -q "resuming from half_.../ckpt-000010.h5" "$r.log" || fail "$r did not resume from step 10"
done
[ "$(final half_res)" = "$(final res_classification)" ] || fail "resident 10 + offloaded 10 differs from 20 straight"
[ "$(final half_off)" = "$(final res_classification)" ] || fail "offloaded 10 + resident 10 differs from 20 straight"
pass "checkpoints resume across placements, bit-identical to a straight run"

# Depth: the measured device peak with offload K=0 does not grow with the
# number of layers; resident grows by one block per layer. plan predicts each.
# (The block arena differs from the parameter count only by alignment
# padding; the resident growth per layer measures it.)
bytes() {  # bytes FILE WHAT: the exact byte count after "WHAT <size> (" in a memory line
  sed -n "s/.*$2 [^(]*(\([0-9]*\) B).*/\1/p" "$1" | head -n 1
}
within() {  # within MEASURED PREDICTED TOL
  awk -v m="$1" -v p="$2" -v t="$3" 'BEGIN { d = m - p; if (d < 0) d = -d; exit !(m > 0 && d <= t * m) }'
}
STEPS=3
for layers in 2 8 16; do
  "$DISTZO" make-model "d$layers.h5" --layers "$layers" --hidden 64 --heads 4 --ffn 256 --vocab 96 --positions 32 >/dev/null
  for mode in resident offload; do
    name="depth_${mode}_$layers"
    MODEL="d$layers.h5" run "$name" lm.h5 'placement:' "  mode: $mode"
    "$DISTZO" plan "$name.yaml" > "$name.plan" || fail "plan $name"
    grep "^${STAMP}memory:" "$name/run.log" > "$name.measured"
    for role in weights scratch activations; do
      m=$(bytes "$name.measured" "$role"); p=$(bytes "$name.plan" "$role")
      within "$m" "$p" 0.05 || fail "$name: $role measured $m B, planned $p B"
    done
    m=$(bytes "$name.measured" "device peak"); p=$(bytes "$name.plan" "total")
    within "$m" "$p" 0.05 || fail "$name: device peak measured $m B, planned $p B"
    m_up=$(sed -n 's/.*last step moved [^(]*(\([0-9]*\) B) to the device.*/\1/p' "$name.measured")
    m_down=$(sed -n 's/.*to the device, [^(]*(\([0-9]*\) B) to the host.*/\1/p' "$name.measured")
    p_up=$(sed -n 's/^moved per step [^(]*(\([0-9]*\) B) to the device.*/\1/p' "$name.plan")
    p_down=$(sed -n 's/^moved per step .*to the device, [^(]*(\([0-9]*\) B) to the host.*/\1/p' "$name.plan")
    [ -n "$m_up" ] && [ "$m_up" = "$p_up" ] && [ "$m_down" = "$p_down" ] ||
      fail "$name: moved $m_up / $m_down B per step, planned $p_up / $p_down B"
    printf -v "peak_${mode}_$layers" '%s' "$m"
  done
done
block=$(( (peak_resident_16 - peak_resident_8) / 8 ))
[ "$block" -gt 0 ] || fail "the resident peak does not grow with depth"
[ $((peak_resident_8 - peak_resident_2)) = $((6 * block)) ] ||
  fail "the resident peak is not linear in depth: 2->8 layers +$((peak_resident_8 - peak_resident_2)) B, 8->16 +$((8 * block)) B"
# Offloaded, the ring has prefetch + 2 = 3 slots once 3 or more blocks
# stream: 8 and 16 layers hold the very same bytes. A 2-layer model streams
# only 2 blocks and gets 2 slots (the ring never has more slots than blocks),
# so it holds exactly one block less.
[ "$peak_offload_16" = "$peak_offload_8" ] ||
  fail "the offloaded peak grows with depth: 8 -> 16 layers: $peak_offload_8 -> $peak_offload_16 B"
[ $((peak_offload_8 - peak_offload_2)) = "$block" ] ||
  fail "offloaded, 2 -> 8 layers: +$((peak_offload_8 - peak_offload_2)) B, expected one slot ($block B)"
pass "device peak, offload K=0: $peak_offload_2 / $peak_offload_8 / $peak_offload_16 B for 2 / 8 / 16 layers (one block: $block B); resident $peak_resident_2 / $peak_resident_8 / $peak_resident_16 B; plan within 5% of each, bytes moved per step exact"

# plan from a Hugging Face config.json: the largest K it says fits does fit,
# and one more block does not; bad requests are errors naming the option.
printf '%s\n' '{"model_type": "opt", "hidden_size": 64, "num_hidden_layers": 16, "num_attention_heads": 4,' \
  '"ffn_dim": 256, "vocab_size": 96, "max_position_embeddings": 32}' > tiny.json
total() { bytes <("$DISTZO" plan tiny.json --seq 32 --placement offload --resident-blocks "$1") total; }
gib=$(awk -v b="$(total 5)" 'BEGIN { printf "%.9f", (b + 1000) / 1073741824 }')
"$DISTZO" plan tiny.json --seq 32 --placement offload --device-gib "$gib" > fit.txt
k=$(sed -n 's/.*the largest resident_blocks that fits is K = \([0-9]*\).*/\1/p' fit.txt)
[ "$k" = 5 ] || fail "plan --device-gib: expected K = 5 for a device of total(K=5) + 1000 B, got: $(tail -n 1 fit.txt)"
[ "$(total 6)" -gt "$(awk -v g="$gib" 'BEGIN { printf "%.0f", g * 1073741824 }')" ] || fail "K = 6 would fit too"
for bad in "--seq 33:exceed the model's 32 positions (pass --seq 32 or less)" "--placement swap:--placement must be resident or offload" \
            "--frobnicate 1:unknown option '--frobnicate'" "--perturbation 3:--perturbation: P must divide the 2q evaluations of a step: 2 * q = 2 * 1 = 2"; do
  set +e; "$DISTZO" plan tiny.json ${bad%%:*} > bad.out 2>&1; status=$?; set -e
  [ "$status" -ne 0 ] && grep -qF -- "${bad#*:}" bad.out || fail "plan ${bad%%:*}: $(cat bad.out)"
done
set +e; "$DISTZO" plan res_classification.yaml --batch 4 > bad.out 2>&1; status=$?; set -e
[ "$status" -ne 0 ] && grep -qF "is a deck: it says everything but --device-gib itself" bad.out || fail "plan DECK --batch: $(cat bad.out)"
# Not fitting is exit status 1 (for scripts); absurd requests are errors, not overflows.
set +e; "$DISTZO" plan tiny.json --seq 32 --device-gib 0.000001 > small.out 2>&1; status=$?; set -e
[ "$status" = 1 ] && grep -q "does NOT fit" small.out || fail "plan on a too small device: status $status, $(tail -n 1 small.out)"
for bad in "--batch 3000000000:--batch and --seq go up to 2147483647" "--queries 33:queries: allowed 1 to 32" \
            "--batch 100000000 --seq 32:exceeds the 2147483647 rows a batch may have"; do
  set +e; "$DISTZO" plan tiny.json ${bad%%:*} > bad.out 2>&1; status=$?; set -e
  [ "$status" -ne 0 ] && grep -qF -- "${bad#*:}" bad.out || fail "plan ${bad%%:*}: $(cat bad.out)"
done
cp tiny.json tiny.txt  # a config is told by its content, not its name
"$DISTZO" plan tiny.txt --seq 32 > /dev/null || fail "plan does not take a config named .txt"
set +e; "$DISTZO" make-model huge.h5 --layers 99999999999 --hidden 64 --heads 4 --ffn 128 --vocab 100 > bad.out 2>&1; status=$?; set -e
[ "$status" = 2 ] && grep -qF "num_hidden_layers must be in [1, 2147483647]" bad.out && [ ! -e huge.h5 ] ||
  fail "make-model with absurd sizes: status $status, $(cat bad.out)"
# --storage bf16 halves θ's host master and traffic (the device figures are the plan's to tell).
plan_host() { "$DISTZO" plan "$1" --placement offload --storage "$2" | sed -n 's/^host memory .* (\([0-9]*\) B) for θ.*/\1/p'; }
cfg=$(ls "$HERE"/../../perf/opt_configs/opt-125m.json)
[ "$(( $(plan_host "$cfg" fp32) ))" = "$(( 2 * $(plan_host "$cfg" bf16) ))" ] ||
  fail "plan --storage bf16: host master $(plan_host "$cfg" bf16) B, fp32 $(plan_host "$cfg" fp32) B"
set +e; "$DISTZO" plan "$cfg" --storage bf17 > bad_storage.out 2>&1; status=$?; set -e
[ "$status" = 2 ] && grep -qF "plan: --storage: unknown storage dtype 'bf17'; allowed: fp32, bf16, fp16" bad_storage.out ||
  fail "plan --storage bf17: status $status, $(cat bad_storage.out)"
# A config whose weights are bf16 (torch_dtype, or transformers 5's dtype) is planned as its
# import runs, θ in bf16, and says so; --storage still chooses.
sed 's/^{/{"torch_dtype": "bfloat16", /' "$cfg" > bf16_torch.json
sed 's/^{/{"dtype": "bfloat16", /' "$cfg" > bf16_dtype.json
for c in bf16_torch.json bf16_dtype.json; do
  [ "$(plan_host "$c" fp32)" = "$(plan_host "$cfg" fp32)" ] || fail "plan $c --storage fp32 differs from fp32"
  [ "$("$DISTZO" plan "$c" --placement offload | sed -n 's/^host memory .* (\([0-9]*\) B) for θ.*/\1/p')" = "$(plan_host "$cfg" bf16)" ] ||
    fail "plan $c: θ not planned in bf16: $("$DISTZO" plan "$c" --placement offload | grep -m1 '^host memory')"
  "$DISTZO" plan "$c" > dtype.out  # (into a file: grep -q quitting early would SIGPIPE plan under pipefail)
  grep -qF "θ is stored in bf16, as the config's dtype (bfloat16) says and as a run of the imported model stores it" dtype.out ||
    fail "plan $c: no note of the dtype: $(head -n 3 dtype.out)"
done
"$DISTZO" plan --help | head -n 1 | grep -q '^usage: distzo plan DECK.yaml' || fail "plan --help: not plan's usage"
pass "plan config.json: --device-gib finds the largest K that fits (5 of 16), exit 1 when nothing fits; bad options and sizes are errors"
