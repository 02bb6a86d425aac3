#!/usr/bin/env bash
# The demo deck end to end (issue: real data and the demo): wall time of
# `distzo run inputs/demo.yaml` next to the PyTorch MeZO reference running the
# same deck (tools/mezo_finetune.py: same model file, data files, batches per
# step, loss and evaluations), REPS times each, alternating, on 2 threads each
# (OpenBLAS / torch). Both times cover the whole run: loading, 1500 steps and
# the 7 evaluations of 1000 test sentences. Also checks that every distzo
# repetition reports the same accuracies (the run is deterministic).
# Writes its section between the demo markers of perf/RESULTS.md (appending
# them if absent). Run on a quiet machine, after building build/distzo.
# Knobs: REPS (3), DECK (inputs/demo.yaml), BUILD_DIR (build), PYTHON, THREADS (2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
source "$here/lib.sh"
build=${BUILD_DIR:-$root/build}
reps=${REPS:-3}
deck=${DECK:-inputs/demo.yaml}
python=${PYTHON:-python3}
threads=${THREADS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/distzo-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$root"

[ -x "$build/distzo" ] || { echo "bench_demo: build $build/distzo first (README)" >&2; exit 1; }
load=$(start_load bench_demo)

# The deck with its output directory moved into the scratch folder.
sed "s#^\(  dir: \).*#\1$work/distzo#" "$deck" > "$work/deck.yaml"
grep -q "dir: $work/distzo" "$work/deck.yaml" || { echo "bench_demo: no output.dir line in $deck" >&2; exit 1; }

seconds() { local t0=$1 t1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f %.1f %.1f\n", m, v[1], v[NR] }'; }

: > "$work/distzo.times"; : > "$work/mezo.times"
for i in $(seq "$reps"); do
  rm -rf "$work/distzo" "$work/mezo"
  t0=$(date +%s.%N)
  OPENBLAS_NUM_THREADS=$threads "$build/distzo" run "$work/deck.yaml" > "$work/distzo.log"
  seconds "$t0" >> "$work/distzo.times"; echo >> "$work/distzo.times"
  grep '^accuracy:' "$work/distzo.log" >> "$work/distzo.accuracy"
  t0=$(date +%s.%N)
  "$python" tools/mezo_finetune.py "$work/deck.yaml" --out "$work/mezo" --threads "$threads" --log-interval 100000 > "$work/mezo.log"
  seconds "$t0" >> "$work/mezo.times"; echo >> "$work/mezo.times"
  echo "bench_demo: repetition $i/$reps: distzo $(tail -n 1 "$work/distzo.times") s, MeZO $(tail -n 1 "$work/mezo.times") s" >&2
done
[ "$(sort -u "$work/distzo.accuracy" | wc -l)" -eq 1 ] || { echo "bench_demo: distzo repetitions disagree:" >&2; cat "$work/distzo.accuracy" >&2; exit 1; }

read -r dz dz_min dz_max < <(median < "$work/distzo.times")
read -r mz mz_min mz_max < <(median < "$work/mezo.times")
eval_row() { awk -F, -v s="$2" 'NR > 1 && $1 == s { printf "%.1f %% (loss %.4f)", 100 * $3, $2 }' "$1"; }
steps=$(awk -F, 'NR > 1 { s = $1 } END { print s }' "$work/distzo/eval.csv")
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
torch_version=$("$python" -c 'import torch; print(torch.__version__)')
table=$(cat <<MD
<!-- demo:begin -->
## The demo deck, end to end

\`perf/bench_demo.sh\` ($(date -u +%Y-%m-%d), $cpu, $(nproc) cores, load ${load} at start):
\`$deck\` run $reps times by distzo and by the PyTorch MeZO reference
(\`tools/mezo_finetune.py\`, torch $torch_version, eager attention) on the same
model, data, batches and evaluations, alternating; $threads threads each. Wall
time of the whole run (load, $steps steps, evaluations), median (min–max).

| | wall time | test accuracy before → after | test loss before → after |
|---|---|---|---|
| distzo | $dz s ($dz_min–$dz_max) | $(eval_row "$work/distzo/eval.csv" 0 | cut -d' ' -f1-2) → $(eval_row "$work/distzo/eval.csv" "$steps" | cut -d' ' -f1-2) | $(eval_row "$work/distzo/eval.csv" 0 | sed 's/.*loss \(.*\))/\1/') → $(eval_row "$work/distzo/eval.csv" "$steps" | sed 's/.*loss \(.*\))/\1/') |
| PyTorch MeZO | $mz s ($mz_min–$mz_max) | $(eval_row "$work/mezo/eval.csv" 0 | cut -d' ' -f1-2) → $(eval_row "$work/mezo/eval.csv" "$steps" | cut -d' ' -f1-2) | $(eval_row "$work/mezo/eval.csv" 0 | sed 's/.*loss \(.*\))/\1/') → $(eval_row "$work/mezo/eval.csv" "$steps" | sed 's/.*loss \(.*\))/\1/') |
| distzo / MeZO speed | $(awk -v a="$dz" -v b="$mz" 'BEGIN { printf "%.2f×", b / a }') | | |

The two draw different z (Philox vs torch's generator), so their accuracies are
two samples of the same method; perf/DEMO_RESULTS.md compares them over three
seeds. distzo's repetitions gave identical accuracies (deterministic).
<!-- demo:end -->
MD
)
write_section demo "$table"
echo "$table"
