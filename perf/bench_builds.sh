#!/usr/bin/env bash
# Two builds of distzo side by side: bench_forward and bench_step of build A
# (the baseline, e.g. the commit before a refactor) and of build B, on the same
# random model (OPT-125m's shape unless CONFIG says another, seed 1) and
# the same token ids, alternating A and B ROUNDS times at each thread count so
# that a drift of the machine hits both. Per build and thread count: the
# median of the rounds' medians (min-max of the rounds), and B / A.
# Writes the section NAME (default `builds`) of perf/RESULTS.md. With
# DEMO_STEPS > 0 (default 0) also the demo deck (inputs/demo.yaml) cut to that
# many steps, end to end with both builds in the same alternation: the wall
# time (loading and the two evaluations included) and whether the two digests
# are the same (they must be: the bits depend on no build choice but the BLAS's
# kernels).
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
demo_steps=${DEMO_STEPS:-0}
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
if [ "$demo_steps" -gt 0 ]; then
  sed -e "s|^  steps: .*|  steps: $demo_steps|" -e "s|^  interval: .*|  interval: $demo_steps|" \
    "$here/../inputs/demo.yaml" > "$work/demo.yaml"
fi
# demo BUILD SIDE N R: the demo deck's wall seconds into demo.SIDE.N, its digest into digest.SIDE.
demo() {
  sed "s|^  dir: .*|  dir: $work/demo.$2.$3.$4|" "$work/demo.yaml" > "$work/demo.$2.yaml"
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$here/.." && OPENBLAS_NUM_THREADS=$3 OMP_NUM_THREADS=$3 "$1/distzo" run "$work/demo.$2.yaml") \
    > "$work/demo.$2.log" 2>&1
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }' >> "$work/demo.$2.$3"
  sed -n 's/.*digest \([0-9a-f]\{16\}\).*/\1/p' "$work/demo.$2.log" | tail -n 1 >> "$work/digest.$2"
}

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
      [ "$demo_steps" -gt 0 ] && demo "$build" "$side" "$n" "$r"
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
demo_rows=""
if [ "$demo_steps" -gt 0 ]; then
  same=$(sort -u "$work/digest.a" "$work/digest.b" | wc -l)
  [ "$same" -eq 1 ] && same="the same digest in every run ($(head -n 1 "$work/digest.a"))" ||
    same="DIFFERENT digests: $(sort -u "$work/digest.a" "$work/digest.b" | tr '\n' ' ')"
  for n in $threads; do
    read -r ma la ha < <(median "$work/demo.a.$n")
    read -r mb lb hb < <(median "$work/demo.b.$n")
    demo_rows+="| demo, $demo_steps steps (s) | $n | $ma ($la–$ha) | $mb ($lb–$hb) | $(awk -v x="$mb" -v y="$ma" 'BEGIN { printf "%.3f", x / y }') |
"
  done
  demo_rows+="
The demo deck (inputs/demo.yaml cut to $demo_steps steps, loading and two evaluations of 1000
sentences included), wall seconds, lower is better: $same.
"
fi
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
${rows}${demo_rows}<!-- $name:end -->"
write_section "$name" "$text"
echo "$text"
