#!/usr/bin/env bash
# Block-sparse steps (optim.perturbed_blocks K, docs/perturbation.md) against
# dense ones at equal forward evaluations: bench_step on the same model and
# causal-LM batch, 1 rank, spsa q = 2 and one_sided N = 3 (4 evaluations a
# step each), every block and K of them. The forward passes are the same
# work; a block outside the step's K gets no z for its w± and no z for the
# terms of an update whose step did not choose it, and is read in place (no
# w± copies). The sides alternate ROUNDS times; each cell is the median of
# the rounds' s/step (min–max), and update_and_perturb's share of a step
# (bench_step --profile); "/ dense" is a row's step time over the same
# estimator's dense row.
# Writes its table between the block-sparse markers of perf/RESULTS.md.
# Knobs: ROUNDS (3), REPS (3), BATCH (8), SEQ (128), PRESET (opt-125m: 12 blocks),
# K ("3"), MODEL (an existing distzo .h5 instead), BUILD_DIR, PYTHON.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
source "$here/lib.sh"
build=${BUILD_DIR:-$root/build}
rounds=${ROUNDS:-3} reps=${REPS:-3} batch=${BATCH:-8} seq=${SEQ:-128} k_list=${K:-3}
python=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/distzo-block-sparse.XXXXXX")
trap 'rm -rf "$work"' EXIT

[ -x "$build/perf/bench_step" ] || { cmake -S "$root" -B "$build" >/dev/null && cmake --build "$build" --target bench_step -j2; }
load=$(start_load bench_block_sparse)
if [ -n "${MODEL:-}" ]; then
  model=$(realpath "$MODEL")
else
  model=$work/model.h5
  "$python" "$root/tools/make_random_opt.py" "$model" --preset "${PRESET:-opt-125m}" >/dev/null
fi
blocks=$("$build/distzo" inspect "$model" | sed -n 's/.*, \([0-9]*\) layers.*/\1/p' | head -1)

rows=""
for est in "spsa 2" "one_sided 3"; do
  read -r estimator q <<< "$est"
  for k in 0 $k_list; do : > "$work/k$k"; done
  for ((r = 0; r < rounds; ++r)); do
    for k in 0 $k_list; do
      echo "bench_block_sparse: $estimator, K = $k, round $((r + 1)) of $rounds ..." >&2
      step_time "$estimator" "$q" --perturbed-blocks "$k" >> "$work/k$k"
    done
  done
  dense=$(cut -d' ' -f1 "$work/k0" | median_range)
  for k in 0 $k_list; do
    s=$(cut -d' ' -f1 "$work/k$k" | median_range) ms=$(cut -d' ' -f2 "$work/k$k" | median_range)
    label=$([ "$k" = 0 ] && echo "every block" || echo "$k of ${blocks:-?} blocks")
    rows+="| $estimator, $([ "$estimator" = spsa ] && echo "q" || echo "N") = $q | $label | $s | $ms | $(ratio "$s" "$dense") |"$'\n'
  done
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
family=$(sed -n 's/^cpu family[[:space:]]*: //p' /proc/cpuinfo | head -1)
text="<!-- block-sparse:begin -->
## Block-sparse steps against dense ones (\`perf/bench_block_sparse.sh\`)

$(date -u +%Y-%m-%d), $cpu (family $family, $(nproc) logical CPUs), load average $load at the start,
OpenBLAS kernels: ${OPENBLAS_CORETYPE:-chosen by OpenBLAS}; \`bench_step\` on $([ -n "${MODEL:-}" ] && echo "$MODEL" || echo "a random ${PRESET:-opt-125m}-shaped OPT") at batch $batch x seq $seq, 1 rank,
4 forward evaluations a step, $rounds rounds alternating the sides, $reps timed steps each; median of the rounds' medians (min–max):

| estimator | blocks perturbed a step | s / step | update_and_perturb ms / step | / dense |
|---|---|---|---|---|
${rows}<!-- block-sparse:end -->"
write_section block-sparse "$text"
echo "$text"
