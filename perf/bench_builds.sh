#!/usr/bin/env bash
# Two builds of distzo side by side: bench_forward and bench_step of build A
# (the baseline, e.g. the commit before a refactor) and of build B, on the same
# random model (OPT-125m's shape unless CONFIG says another, seed 1) and
# the same token ids, alternating A and B ROUNDS times at each thread count so
# that a drift of the machine hits both. Per build and thread count: the
# median of the rounds' medians (min-max of the rounds), and B / A.
# Writes the section NAME (default `builds`) of perf/RESULTS.md.
#
#   perf/bench_builds.sh BUILD_A BUILD_B [LABEL_A] [LABEL_B]
#
# Knobs: ROUNDS (3), THREADS ("1 2"), BATCH (8), SEQ (128), FORWARD_REPS (5),
# STEP_REPS (3), NAME (builds), CONFIG (perf/opt_configs/opt-125m.json: any
# config.json that `distzo make-model --config` takes, e.g.
# perf/smollm2-135m.config.json). The environment reaches both builds: with
# DISTZO_GEMM=library a build that has the tiled host GEMM runs the single
# BLAS call of the builds before it (the section says so).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
[ $# -ge 2 ] || { echo "usage: $0 BUILD_A BUILD_B [LABEL_A] [LABEL_B]" >&2; exit 2; }
a=$1 b=$2 label_a=${3:-A} label_b=${4:-B}
rounds=${ROUNDS:-3}
threads=${THREADS:-"1 2"}
batch=${BATCH:-8} seq=${SEQ:-128}
forward_reps=${FORWARD_REPS:-5} step_reps=${STEP_REPS:-3}
name=${NAME:-builds}
config=${CONFIG:-$here/opt_configs/opt-125m.json}
for build in "$a" "$b"; do
  for bench in bench_forward bench_step; do
    [ -x "$build/perf/$bench" ] || { echo "$0: no $build/perf/$bench (build the target first)" >&2; exit 2; }
    [ -x "$build/distzo" ] || { echo "$0: no $build/distzo (build the target first)" >&2; exit 2; }
  done
done
work=$(mktemp -d "${TMPDIR:-/tmp}/distzo-builds.XXXXXX")
trap 'rm -rf "$work"' EXIT
load=$(start_load bench_builds)
model=$work/model.h5  # ~500 MB
"$b/distzo" make-model "$model" --config "$config" --seed 1 >/dev/null

# result FILE: the median tokens/s of its RESULT line (forward's metric;
# step's tokens_per_s_median field).
result() {
  sed -n -e 's/^RESULT .*"metric":"tokens_per_s","median":\([0-9.e+-]*\).*/\1/p' \
    -e 's/^RESULT .*"tokens_per_s_median":"\{0,1\}\([0-9.e+-]*\).*/\1/p' "$1" | head -n 1
}
for n in $threads; do
  for r in $(seq "$rounds"); do
    for side in a b; do
      build=$a; [ "$side" = b ] && build=$b
      echo "bench_builds: $side ($build), $n thread(s), round $r of $rounds ..." >&2
      OPENBLAS_NUM_THREADS=$n OMP_NUM_THREADS=$n "$build/perf/bench_forward" "$model" --batch "$batch" \
        --seq "$seq" --reps "$forward_reps" > "$work/forward.$side.$n.$r" 2>&1
      OPENBLAS_NUM_THREADS=$n OMP_NUM_THREADS=$n "$build/perf/bench_step" "$model" --batch "$batch" \
        --seq "$seq" --reps "$step_reps" > "$work/step.$side.$n.$r" 2>&1
      for bench in forward step; do result "$work/$bench.$side.$n.$r" >> "$work/$bench.$side.$n"; done
    done
  done
done

median() { sort -g "$1" | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f %.1f %.1f\n", m, v[1], v[NR] }'; }
rows=""
for n in $threads; do
  for bench in forward step; do
    read -r ma la ha < <(median "$work/$bench.a.$n")
    read -r mb lb hb < <(median "$work/$bench.b.$n")
    rows+="| $bench | $n | $ma ($la–$ha) | $mb ($lb–$hb) | $(awk -v x="$mb" -v y="$ma" 'BEGIN { printf "%.3f", x / y }') |
"
  done
done
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
isa=$(grep -q avx512f /proc/cpuinfo && echo AVX-512 || echo AVX2)
text="<!-- $name:begin -->
## Two builds: $label_b against $label_a

\`perf/bench_builds.sh\` ($(date -u +%Y-%m-%d), $cpu, $isa, $(nproc) logical CPUs,
load average $load at the start): \`bench_forward\` and \`bench_step\` (tokens/s)
on a random model of \`${config#"$(cd "$here/.." && pwd)/"}\`'s shape (\`distzo make-model
--seed 1\`), batch $batch x seq $seq, $forward_reps forward and $step_reps step timed
repetitions, the two builds alternated $rounds times per thread count; the
median of the rounds' medians (min–max of the rounds).${DISTZO_GEMM:+ Both ran with
\`DISTZO_GEMM=$DISTZO_GEMM\`.}

| bench | threads | $label_a tokens/s | $label_b tokens/s | $label_b / $label_a |
|---|---|---|---|---|
${rows}<!-- $name:end -->"
write_section "$name" "$text"
echo "$text"
