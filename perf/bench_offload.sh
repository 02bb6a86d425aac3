#!/usr/bin/env bash
# Placement I, measured: `distzo run` on a random OPT-125m-shaped model with θ
# resident and offloaded (ZO2: every block streamed from host memory through
# device slots, K = 0; and K = 6 of 12 blocks resident), side by side in one
# run, alternating the placements REPS times. Per placement: the step time
# (median over the timed steps of every repetition, min-max), θ's bytes moved
# per step, and the device high-water mark measured by Kokkos Tools next to
# `distzo plan`'s prediction. Then `distzo plan` for the OPT-1.3B/13B/66B/175B
# shapes at ZO2's memory setting (causal LM, batch 1 x 2048 tokens), next to
# the GPU memory ZO2 reports. Writes the `offload` section of perf/RESULTS.md.
# On this CPU machine "device" memory is host memory too: the copies are real
# host-to-host copies, so the time measures the schedule's overhead, not PCIe.
# Knobs: STEPS (5; the first is warm-up), REPS (2), THREADS (2), BUILD_DIR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
source "$here/lib.sh"
build=${BUILD_DIR:-$root/build}
steps=${STEPS:-5}
reps=${REPS:-2}
threads=${THREADS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/distzo-offload.XXXXXX")
trap 'rm -rf "$work"' EXIT

[ -x "$build/distzo" ] || { cmake -S "$root" -B "$build" >/dev/null && cmake --build "$build" --target distzo -j2; }
distzo=$build/distzo
load=$(start_load bench_offload)
"$distzo" make-model "$work/model.h5" --config "$here/opt_configs/opt-125m.json" --seed 1 >/dev/null
"$distzo" make-synthetic "$work/train.h5" --task causal_lm --examples 64 --seq-len 128 --vocab 50272 --seed 5 >/dev/null

placement_lines() {  # placement_lines NAME
  case $1 in
    resident) echo "placement: { mode: resident }" ;;
    offload_k0) echo "placement: { mode: offload, resident_blocks: 0, prefetch: 1 }" ;;
    offload_k6) echo "placement: { mode: offload, resident_blocks: 6, prefetch: 1 }" ;;
  esac
}
names=(resident offload_k0 offload_k6)
for name in "${names[@]}"; do
  cat > "$work/$name.yaml" <<DECK
model: { path: $work/model.h5 }
data: { train: $work/train.h5, micro_batch: 8 }
optim: { steps: $steps, lr: 1.0e-6, eps: 1.0e-3 }
output: { dir: $work/$name, log_interval: 1 }
$(placement_lines "$name")
DECK
  "$distzo" plan "$work/$name.yaml" > "$work/$name.plan"
done

for r in $(seq "$reps"); do
  for name in "${names[@]}"; do
    echo "bench_offload: $name, repetition $r of $reps ..." >&2
    rm -rf "${work:?}/$name"
    OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads "$distzo" run "$work/$name.yaml" > "$work/$name.$r.log" 2>&1 ||
      { cat "$work/$name.$r.log" >&2; exit 1; }
    awk -F, 'NR > 2 { print $8 }' "$work/$name/metrics.csv" >> "$work/$name.seconds"  # step_seconds, timed steps
    grep -E '^([0-9-]+T[0-9:.]+Z )?memory:' "$work/$name/run.log" > "$work/$name.measured"
  done
done

bytes() { sed -n "s/.*$2 [^(]*(\([0-9]*\) B).*/\1/p" "$1" | head -n 1; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f %.3f %.3f\n", m, v[1], v[NR] }'; }
read -r base _ _ < <(median "$work/resident.seconds")
rows=""
for name in "${names[@]}"; do
  read -r med lo hi < <(median "$work/$name.seconds")
  up=$(sed -n 's/.*last step moved [^(]*(\([0-9]*\) B) to the device.*/\1/p' "$work/$name.measured")
  down=$(sed -n 's/.*to the device, [^(]*(\([0-9]*\) B) to the host.*/\1/p' "$work/$name.measured")
  measured=$(bytes "$work/$name.measured" "device peak")
  planned=$(bytes "$work/$name.plan" "total")
  host=$(bytes "$work/$name.plan" "host memory")
  rows+="| $(sed -n 's/^placement *//p' "$work/$name.plan") | $med ($lo–$hi) | $(awk -v a="$med" -v b="$base" 'BEGIN { printf "%.3f", a / b }') | $(mib "$up") / $(mib "$down") | $(mib "$measured") | $(mib "$planned") | $(awk -v a="$planned" -v b="$measured" 'BEGIN { printf "%+.2f %%", 100 * (a - b) / b }') | $(mib "$host") |
"
done

zo2_rows=""
declare -A zo2=([1.3b]=3.75 [13b]=6.18 [66b]=12.07 [175b]=18.04)
for shape in 1.3b 13b 66b 175b; do
  "$distzo" plan "$here/opt_configs/opt-$shape.json" --placement offload --batch 1 --seq 2048 > "$work/plan-$shape.txt"
  "$distzo" plan "$here/opt_configs/opt-$shape.json" --batch 1 --seq 2048 > "$work/plan-$shape-resident.txt"
  gib() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1073741824 }'; }
  p=$(bytes "$work/plan-$shape.txt" "total")
  w=$(bytes "$work/plan-$shape.txt" "weights"); s=$(bytes "$work/plan-$shape.txt" "scratch"); a=$(bytes "$work/plan-$shape.txt" "activations")
  res=$(bytes "$work/plan-$shape-resident.txt" "total")
  host=$(bytes "$work/plan-$shape.txt" "host memory")
  up=$(sed -n 's/^moved per step [^(]*(\([0-9]*\) B) to the device.*/\1/p' "$work/plan-$shape.txt")
  zo2_rows+="| OPT-$shape | $(gib "$res") | $(gib "$p") ($(gib "$w") + $(gib "$s") + $(gib "$a")) | $(gib "$host") | $(gib "$up") | ${zo2[$shape]} GB |
"
done

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
table=$(cat <<MD
<!-- offload:begin -->
## Placement I: offloaded vs resident (ZO2)

\`perf/bench_offload.sh\` ($(date -u +%Y-%m-%d), $cpu, $(nproc) cores, load ${load} at start,
OpenBLAS $threads threads, Kokkos Serial). \`distzo run\` on a random OPT-125m-shaped
model (\`distzo make-model --config perf/opt_configs/opt-125m.json\`), synthetic
causal-LM data, micro-batch 8 x 128 tokens, q = 1; $steps steps per run (the first
is warm-up), the placements alternated $reps times in this one run; step time
= median (min–max) over every timed step. "Device" memory is host memory on this
machine: uploads and write-backs are real host-to-host copies, so the time shows
the streaming schedule's cost on a CPU, not PCIe. Device peak: measured by Kokkos
Tools during the run (every distzo allocation of a device role), next to
\`distzo plan\` for the same deck.

| placement | s / step | vs resident | MiB moved per step (up / back) | device peak MiB, measured | planned | plan error | host MiB for θ |
|---|---|---|---|---|---|---|---|
${rows}
Planned device peak (\`distzo plan opt-X.json --placement offload --batch 1 --seq 2048\`,
causal LM, K = 0, prefetch 1, 3 slots) at ZO2's memory benchmark setting
(test/mezo_sgd/hf_opt/record_zo2_memory.sh: batch 1 x 2048 tokens, causal LM),
next to the GPU memory ZO2 reports. Not like for like: ZO2 stores and moves fp16,
distzo float32 (2x every weight-sized term); ZO2 perturbs θ in place, distzo
materialises w± out of place (two block-sized scratch buffers, the price of
never perturbing θ); ZO2's figure is NVML's "used" (CUDA context and allocator
cache included), distzo's is the sum of its allocations.

| shape | resident, GiB | offload K=0, GiB (weights + scratch + activations) | host GiB for θ | GiB moved up per step | ZO2 (fp16, NVML) |
|---|---|---|---|---|---|
${zo2_rows}<!-- offload:end -->
MD
)
write_section offload "$table"
echo "$table"
