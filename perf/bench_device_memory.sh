#!/usr/bin/env bash
# Device memory at ZO2's setting, and what holding less costs. Two parts,
# written to the `device-memory` section of perf/RESULTS.md:
#   1. `distzo plan` for the OPT-1.3B/13B/66B/175B shapes (perf/opt_configs),
#      causal LM, batch 1 x 2048 tokens, every block offloaded (K = 0), one
#      rank: θ in fp32 and bf16, w± together and one at a time
#      (placement.perturbed_weights), and with two slots (placement.slots:
#      prefetch + 1), next to ZO2's published GPU memory and
#      issue 22's goal (0.75 x ZO2). The plan equals the measured high-water
#      mark to the byte on the models the tests run (tests/test_plan.cpp).
#   2. bench_step on a random OPT-125m-shaped model (micro-batch 8 x 128,
#      q = 1, resident, bf16 + SR and fp32): together and one_at_a_time
#      alternated REPS times in this one run; median s/step and the ratios
#      (one_at_a_time / together, bf16 / fp32).
# Knobs: REPS (3), STEP_REPS (3 timed steps per bench_step), THREADS (2), BUILD_DIR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
source "$here/lib.sh"
build=${BUILD_DIR:-$root/build}
reps=${REPS:-3}
step_reps=${STEP_REPS:-3}
threads=${THREADS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/distzo-device-memory.XXXXXX")
trap 'rm -rf "$work"' EXIT
for t in distzo perf/bench_step; do
  [ -x "$build/$t" ] || { echo "bench_device_memory: $build/$t missing; build first (cmake --build $build)" >&2; exit 2; }
done
load=$(start_load bench_device_memory)

bytes() { sed -n "s/.*$2 [^(]*(\([0-9]*\) B).*/\1/p" "$1" | head -n 1; }
gib() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1073741824 }'; }
declare -A zo2=([1.3b]=3.75 [13b]=6.18 [66b]=12.07 [175b]=18.04)
configs=("fp32 together 0 fp32" "bf16 together 0 fp32" "bf16 one_at_a_time 0 fp32" "bf16 one_at_a_time 2 fp32"
         "bf16 one_at_a_time 2 storage")
rows=""
for shape in 1.3b 13b 66b 175b; do
  row="| OPT-$shape | ${zo2[$shape]} GB = $(awk -v g="${zo2[$shape]}" 'BEGIN { printf "%.2f", g * 1e9 / 1073741824 }') | $(awk -v g="${zo2[$shape]}" 'BEGIN { printf "%.2f", 0.75 * g * 1e9 / 1073741824 }')"
  for c in "${configs[@]}"; do
    read -r storage perturbed slots gemm_inputs <<< "$c"
    plan=$work/plan-$shape-$storage-$perturbed-$slots-$gemm_inputs.txt
    "$build/distzo" plan "$here/opt_configs/opt-$shape.json" --placement offload --batch 1 --seq 2048 \
      --storage "$storage" --perturbed-weights "$perturbed" --slots "$slots" \
      --gemm-inputs "$gemm_inputs" > "$plan"
    row+=" | $(gib "$(bytes "$plan" total)") ($(gib "$(bytes "$plan" weights)") + $(gib "$(bytes "$plan" scratch)") + $(gib "$(bytes "$plan" activations)"))"
  done
  params=$(sed -n 's/^parameters *\([0-9]*\).*/\1/p' "$plan")
  host=$(bytes "$work/plan-$shape-bf16-together-0-fp32.txt" "host memory")
  rows+="$row | $(gib "$host") ($(awk -v h="$host" -v p="$params" 'BEGIN { printf "%.2f", h / p }') B/param) |
"
done

"$build/distzo" make-model "$work/model.h5" --config "$here/opt_configs/opt-125m.json" --seed 1 >/dev/null
declare -A seconds
for r in $(seq "$reps"); do
  for storage in bf16 fp32; do
    for perturbed in together one_at_a_time; do
      echo "bench_device_memory: $storage $perturbed, repetition $r of $reps ..." >&2
      OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads "$build/perf/bench_step" "$work/model.h5" \
        --batch 8 --seq 128 --reps "$step_reps" --storage "$storage" --perturbed-weights "$perturbed" \
        > "$work/step-$storage-$perturbed.$r.txt"
      s=$(sed -n 's/.*"s_per_step": *"\{0,1\}\([0-9.eE+-]*\).*/\1/p' "$work/step-$storage-$perturbed.$r.txt" | head -n 1)
      [ -n "$s" ] || { cat "$work/step-$storage-$perturbed.$r.txt" >&2; exit 1; }
      seconds[$storage-$perturbed]+="$s "
    done
  done
done
median() { tr ' ' '\n' <<< "$1" | grep . | sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f (%.3f–%.3f)", m, v[1], v[NR] }'; }
step_rows=""
for storage in bf16 fp32; do
  t=$(median "${seconds[$storage-together]}"); o=$(median "${seconds[$storage-one_at_a_time]}")
  step_rows+="| $storage | $t | $o | $(awk -v a="${o%% *}" -v b="${t%% *}" 'BEGIN { printf "%.3f", a / b }') |
"
done

t16=$(median "${seconds[bf16-together]}"); t32=$(median "${seconds[fp32-together]}")
storage_ratio=$(awk -v a="${t16%% *}" -v b="${t32%% *}" 'BEGIN { printf "%.3f", a / b }')

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
isa=$(grep -m1 -o -w -E 'avx512f|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')
table=$(cat <<MD
<!-- device-memory:begin -->
## Device memory at ZO2's setting, and the cost of holding less

\`perf/bench_device_memory.sh\` ($(date -u +%Y-%m-%d), $cpu (${isa% }), $(nproc) cores, load ${load} at start).

Planned device memory per rank, GiB (weights + scratch + activations), of
\`distzo plan opt-X.json --placement offload --batch 1 --seq 2048 --storage S
--perturbed-weights W [--slots 2] [--gemm-inputs storage]\`: causal LM, K = 0,
prefetch 1, 3 slots (2 in the last two columns), one rank; \`gemm_inputs\`
storage: every matrix's w± as 2-byte words, a block's a tensor at a time
(docs/perturbation.md). The
plan is the measured high-water mark to the byte on every model the tests run.
ZO2's figure is NVML's on a GPU (fp16 θ perturbed in place, no w buffers,
CUDA context included). Host memory is θ's bf16 master of the streamed blocks.

| shape | ZO2, GiB | goal (0.75 × ZO2) | fp32, together | bf16, together | bf16, one_at_a_time | bf16, one_at_a_time, 2 slots | the same, gemm_inputs storage | host, bf16 |
|---|---|---|---|---|---|---|---|---|
${rows}
What one_at_a_time costs on the host: \`bench_step\` on a random OPT-125m-shaped
model, micro-batch 8 x 128, q = 1, resident, OpenBLAS $threads threads, Kokkos
Serial; median (min–max) s/step of $reps bench_step runs ($step_reps timed steps
each, their median), the modes alternated in this one run.

| θ | together, s/step | one_at_a_time, s/step | one_at_a_time / together |
|---|---|---|---|
${step_rows}
θ in bf16 (stochastic rounding) against fp32, both together: ${storage_ratio} × the fp32 step time.
<!-- device-memory:end -->
MD
)
write_section device-memory "$table"
echo "$table"
