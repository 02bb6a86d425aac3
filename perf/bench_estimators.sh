#!/usr/bin/env bash
# Each estimator's step time against MeZO-SGD's at equal forward evaluations
# (optim.estimator, docs/perturbation.md): bench_step on the same model and
# causal-LM batch, 1 rank, for E = 4, 10 and 18 evaluations a step: spsa with
# q = E/2 queries beside one_sided with N = E - 1 directions (N + 1 = E).
# The forward passes are the same work; what differs is z: a step
# regenerates the pending update's directions and draws its own, q + q for
# spsa and N + N for one_sided, so one_sided draws about twice the z at equal
# E (its unperturbed evaluation draws none). The two sides alternate ROUNDS
# times; each cell is the median of the rounds' median s/step (min–max of the
# rounds), and update_and_perturb's share of a step (bench_step --profile).
# Writes its table between the estimators markers of perf/RESULTS.md.
# Knobs: ROUNDS (3), REPS (3), BATCH (8), SEQ (128), PRESET (opt-125m),
# MODEL (an existing distzo .h5 instead), BUILD_DIR, PYTHON.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
source "$here/lib.sh"
build=${BUILD_DIR:-$root/build}
rounds=${ROUNDS:-3} reps=${REPS:-3} batch=${BATCH:-8} seq=${SEQ:-128}
python=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/distzo-estimators.XXXXXX")
trap 'rm -rf "$work"' EXIT

[ -x "$build/perf/bench_step" ] || { cmake -S "$root" -B "$build" >/dev/null && cmake --build "$build" --target bench_step -j2; }
load=$(start_load bench_estimators)
if [ -n "${MODEL:-}" ]; then
  model=$(realpath "$MODEL")
else
  model=$work/model.h5
  "$python" "$root/tools/make_random_opt.py" "$model" --preset "${PRESET:-opt-125m}" >/dev/null
fi

step() {  # step ESTIMATOR Q: "s_per_step update_ms" of one bench_step run
  "$build/perf/bench_step" "$model" --batch "$batch" --seq "$seq" --reps "$reps" \
    --estimator "$1" --queries "$2" --profile > "$work/out" 2>&1 || { cat "$work/out" >&2; return 1; }
  local s ms
  s=$(sed -n 's/.*"metric":"steps_per_s".*"s_per_step":"\([0-9.e+-]*\)".*/\1/p' "$work/out")
  # the kernel's time: its host-thread region (large tensors) and its Kokkos kernel (small ones)
  ms=$(sed -n 's/.*"metric":"profile","median":\([0-9.e+-]*\),.*"label":"\(\[region\] \)\{0,1\}distzo::update_and_perturb".*/\1/p' "$work/out" |
    awk '{ t += $1 } END { if (NR) printf "%.4g\n", t }')
  echo "$s ${ms:-?}"
}
median() { sort -g | awk '{ v[NR] = $1 } END { printf "%.4g (%.4g–%.4g)", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[1], v[NR] }'; }

rows=""
for e in 4 10 18; do
  q=$((e / 2)) n=$((e - 1))
  : > "$work/spsa" && : > "$work/one"
  for ((r = 0; r < rounds; ++r)); do
    echo "bench_estimators: E = $e, round $((r + 1)) of $rounds ..." >&2
    step spsa "$q" >> "$work/spsa"
    step one_sided "$n" >> "$work/one"
  done
  spsa=$(cut -d' ' -f1 "$work/spsa" | median) one=$(cut -d' ' -f1 "$work/one" | median)
  spsa_ms=$(cut -d' ' -f2 "$work/spsa" | median) one_ms=$(cut -d' ' -f2 "$work/one" | median)
  ratio=$(awk -v a="${one%% *}" -v b="${spsa%% *}" 'BEGIN { printf "%.3f", a / b }')
  rows+="| $e | spsa q = $q | $spsa | $spsa_ms |"$'\n'
  rows+="| $e | one_sided N = $n | $one | $one_ms | $ratio |"$'\n'
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
family=$(sed -n 's/^cpu family[[:space:]]*: //p' /proc/cpuinfo | head -1)
text="<!-- estimators:begin -->
## Estimators at equal forward evaluations (\`perf/bench_estimators.sh\`)

$(date -u +%Y-%m-%d), $cpu (family $family, $(nproc) logical CPUs), load average $load at the start,
\`bench_step\` on $([ -n "${MODEL:-}" ] && echo "$MODEL" || echo "a random ${PRESET:-opt-125m}-shaped OPT") at batch $batch x seq $seq, 1 rank,
$rounds rounds alternating the two sides, $reps timed steps each; median of the rounds' medians (min–max):

| evaluations E | estimator | s / step | update_and_perturb ms / step | one_sided / spsa |
|---|---|---|---|---|
${rows}
<!-- estimators:end -->"
write_section estimators "$text"
echo "$text"
