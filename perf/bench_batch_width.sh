#!/usr/bin/env bash
# data.batch_width (docs/datasets.md, "Micro-batches"), measured two ways in
# one run on a quiet machine:
#   1. the forward's time against the width: bench_forward on MODEL (default a
#      random model of SmolLM2-135M's shape, made with `distzo make-model`) at
#      batch 8 and each width of WIDTHS, REPS timed repetitions each — does a
#      width that is a multiple of 8 run faster per token?
#   2. a deck end to end at batch_width: full and trimmed, alternating, RUNS
#      times each: the wall time of the whole run (loading, steps, evaluations)
#      and the ratio of the medians.
# Writes its section between the batch-width markers of perf/RESULTS.md.
# Knobs: BUILD_DIR (build), MODEL, WIDTHS, REPS (3), DECK (inputs/demo.yaml),
# RUNS (3), THREADS (2; 1 for the forward sweep). OpenBLAS's kernels are
# whatever the environment gives (set OPENBLAS_CORETYPE where distzo warns).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
source "$here/lib.sh"
build=${BUILD_DIR:-$root/build}
widths=${WIDTHS:-24 25 26 27 28 29 30 31 32 33 36 40 48 56 64}
reps=${REPS:-3}
deck=${DECK:-inputs/demo.yaml}
runs=${RUNS:-3}
threads=${THREADS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/distzo-width.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$root"
[ -x "$build/distzo" ] && [ -x "$build/perf/bench_forward" ] ||
  { echo "bench_batch_width: build $build first (README)" >&2; exit 1; }
load=$(start_load bench_batch_width)

model=${MODEL:-}
if [ -z "$model" ]; then
  model=$work/smollm2-shape.h5
  "$build/distzo" make-model "$model" --config "$root/perf/smollm2-135m.config.json" > /dev/null
fi

# 1. The forward at each width.
rows=""
blas=""
for T in $widths; do
  OPENBLAS_NUM_THREADS=1 "$build/perf/bench_forward" "$model" --batch 8 --seq "$T" --reps "$reps" --warmup 1 |
    grep '^RESULT' > "$work/forward.json"
  line=$(python3 - "$work/forward.json" <<'PY'
import json, sys
rows = [json.loads(l[7:]) for l in open(sys.argv[1])]
m, r = rows[0], rows[1]
print(m["blas"].split()[-2], "| %d | %.0f | %.1f | %.1f–%.1f | %.1f |" % (
    int(r["seq"]), float(r["ms_per_forward"]), r["median"], r["min"], r["max"],
    float(r["ms_per_forward"]) / int(r["seq"])))
PY
)
  blas=${line%% *}
  rows+="${line#* }"$'\n'
  echo "bench_batch_width: width $T: ${line#* }" >&2
done

# 2. The deck end to end at each width.
seconds() { local t0=$1 t1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f %.1f %.1f\n", m, v[1], v[NR] }'; }
for w in full trimmed; do
  sed "s#^\(  dir: \).*#\1$work/$w#; s#^\(  micro_batch: .*\)#\1\n  batch_width: $w#" "$deck" > "$work/$w.yaml"
  grep -q "batch_width: $w" "$work/$w.yaml" || { echo "bench_batch_width: no data.micro_batch line in $deck" >&2; exit 1; }
  : > "$work/$w.times"
done
for i in $(seq "$runs"); do
  for w in full trimmed; do
    rm -rf "${work:?}/$w"
    t0=$(date +%s.%N)
    OPENBLAS_NUM_THREADS=$threads "$build/distzo" run "$work/$w.yaml" > "$work/$w.log"
    echo "$(seconds "$t0")" >> "$work/$w.times"
    grep '^accuracy:' "$work/$w.log" > "$work/$w.accuracy"
    echo "bench_batch_width: run $i/$runs, $w: $(tail -n 1 "$work/$w.times") s, $(cat "$work/$w.accuracy")" >&2
  done
done
read -r full full_min full_max < <(median < "$work/full.times")
read -r trim trim_min trim_max < <(median < "$work/trimmed.times")
ratio=$(awk -v a="$full" -v b="$trim" 'BEGIN { printf "%.2f", a / b }')
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
table=$(cat <<MD
<!-- batch-width:begin -->
## Batch width (data.batch_width)

\`perf/bench_batch_width.sh\` ($(date -u +%Y-%m-%d), $cpu, $(nproc) cores, OpenBLAS $blas kernels, load ${load} at start).

**The forward against the width**: \`bench_forward\` on $( [ -n "${MODEL:-}" ] && echo "\`$MODEL\`" || echo "a random model of SmolLM2-135M's shape") at batch 8, 1 thread, median of $reps.

| width T | ms per forward | tokens/s (median) | range | ms per position |
|---|---|---|---|---|
${rows%$'\n'}

**\`$deck\` end to end**, $runs runs each, alternating, $threads threads: \`batch_width: full\` $full s (range $full_min–$full_max), \`trimmed\` $trim s ($trim_min–$trim_max): **$ratio×**. Accuracy, full: $(cat "$work/full.accuracy" | sed 's/^accuracy: //'); trimmed: $(cat "$work/trimmed.accuracy" | sed 's/^accuracy: //').
<!-- batch-width:end -->
MD
)
write_section batch-width "$table"
echo "$table"
