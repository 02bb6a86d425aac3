#!/usr/bin/env bash
# The tiled host GEMM (kernels/host_gemm.hpp: tiles fixed by each GEMM's
# shape, one single-threaded BLAS call each, distzo's own threads) against the
# path before it (DISTZO_GEMM=library: one KokkosBlas::gemm call on
# OpenBLAS's threads), in the same binaries, alternated: bench_forward and
# bench_step on a random OPT-125m-shaped model (`distzo make-model --config
# perf/opt_configs/opt-125m.json`), batch 8 x 128, at 1 and 2 threads
# (OPENBLAS_NUM_THREADS=n, which set_blas_threads gives to the path chosen).
# Each round runs every (threads, path) once, the order of the paths
# swapped every round; a cell is the median over rounds of each run's median
# time (ms per forward, s per ZO step); the ratio is tiled / library. Writes
# its table between the gemm markers of perf/RESULTS.md. Run on a quiet
# machine. Knobs: ROUNDS (3), FORWARD_REPS (3), STEP_REPS (2), THREADS
# ("1 2"), BATCH (8), SEQ (128), BUILD_DIR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
source "$here/lib.sh"
build=${BUILD_DIR:-$root/build}
rounds=${ROUNDS:-3}
threads_list=${THREADS:-1 2}
batch=${BATCH:-8}
seq_len=${SEQ:-128}
work=$(mktemp -d "${TMPDIR:-/tmp}/distzo-gemm.XXXXXX")
trap 'rm -rf "$work"' EXIT

[ -x "$build/distzo" ] && [ -x "$build/perf/bench_forward" ] && [ -x "$build/perf/bench_step" ] ||
  { cmake -S "$root" -B "$build" > /dev/null &&
    cmake --build "$build" --target distzo bench_forward bench_step -j2; }
load_start=$(start_load bench_gemm)
started=$(date +%s)
"$build/distzo" make-model "$work/model.h5" --config "$here/opt_configs/opt-125m.json" --seed 1 > /dev/null

field() { grep '^RESULT' "$1" | tail -1 | sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for r in $(seq 1 "$rounds"); do
  paths="library tiled"
  [ $((r % 2)) -eq 0 ] && paths="tiled library"
  for t in $threads_list; do
    for p in $paths; do
      log=$work/forward.$t.$p.$r.log
      DISTZO_GEMM=$p OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=1 "$build/perf/bench_forward" "$work/model.h5" \
        --batch "$batch" --seq "$seq_len" --reps "${FORWARD_REPS:-3}" > "$log" 2>&1 || { cat "$log" >&2; exit 1; }
      grep -q "\"gemm\":\"$p x$t\"" "$log" || { echo "bench_gemm: $log did not run $p x$t" >&2; exit 1; }
      field "$log" ms_per_forward >> "$work/forward.$t.$p"
      field "$log" loss >> "$work/loss.$t.$p"
      log=$work/step.$t.$p.$r.log
      DISTZO_GEMM=$p OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=1 "$build/perf/bench_step" "$work/model.h5" \
        --batch "$batch" --seq "$seq_len" --reps "${STEP_REPS:-2}" > "$log" 2>&1 || { cat "$log" >&2; exit 1; }
      field "$log" s_per_step >> "$work/step.$t.$p"
      echo "round $r, $t thread(s), $p: forward $(tail -1 "$work/forward.$t.$p") ms, step $(tail -1 "$work/step.$t.$p") s" >&2
    done
  done
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
blas=$(sed -n 's/^blas *: //p' "$work"/forward.1.tiled.1.log | head -1)
rows=""
for t in $threads_list; do
  fl=$(median < "$work/forward.$t.library") ft=$(median < "$work/forward.$t.tiled")
  sl=$(median < "$work/step.$t.library") st=$(median < "$work/step.$t.tiled")
  all() { tr '\n' ' ' < "$1" | sed 's/ $//; s/ /, /g'; }
  rows+=$(awk -v t="$t" -v fl="$fl" -v ft="$ft" -v sl="$sl" -v st="$st" -v afl="$(all "$work/forward.$t.library")" \
    -v aft="$(all "$work/forward.$t.tiled")" -v asl="$(all "$work/step.$t.library")" -v ast="$(all "$work/step.$t.tiled")" \
    'BEGIN { printf "| %d | %.0f (%s) | %.0f (%s) | %.3f× | %.3f (%s) | %.3f (%s) | %.3f× |\n", t, fl, afl, ft, aft, ft / fl, sl, asl, st, ast, st / sl }')
  rows+=$'\n'
  # The loss at θ must not depend on the path beyond float rounding.
  cat "$work/loss.$t.library" "$work/loss.$t.tiled" | awk '{ v[NR] = $1 } END {
      for (i = 2; i <= NR; ++i) { d = v[i] - v[1]; if (d < 0) d = -d; if (d > 1e-5 * (v[1] < 0 ? -v[1] : v[1])) bad = 1 }
      exit bad }' || { echo "bench_gemm: the forward losses differ between the paths at $t thread(s)" >&2; exit 1; }
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

write_section gemm "<!-- gemm:begin -->
## Host GEMM: tiles fixed by the shape vs the BLAS's own threads

Written by \`perf/bench_gemm.sh\` on $(date -u +%Y-%m-%dT%H:%M:%SZ) ($(( $(date +%s) - started )) s). CPU: $cpu, $(nproc) logical CPUs; BLAS: ${blas:-?}. Random OPT-125m shape (\`distzo make-model --config perf/opt_configs/opt-125m.json --seed 1\`), batch $batch × seq $seq_len. **library** = \`DISTZO_GEMM=library\`: one \`KokkosBlas::gemm\` call on OpenBLAS's threads, the path before issue 21 (its bits may change with the thread count); **tiled** = the default: tiles of at most 512 × 1024 fixed by each GEMM's shape, one single-threaded BLAS call each, spread over distzo's threads (bits independent of the thread count). Same binaries; $rounds rounds, each running every cell once with the order of the two paths swapped every round; a cell is the median over rounds of each run's median (\`bench_forward --reps ${FORWARD_REPS:-3}\`, \`bench_step --reps ${STEP_REPS:-2}\`), every round's value in brackets; ratio = tiled / library (above 1: the tiles are slower). Load average (1, 5, 15 min) at start: $load_start, at end: $load_end — anything well above 0 means other work shared the machine.

| threads | forward ms, library | forward ms, tiled | tiled / library | step s, library | step s, tiled | tiled / library |
|---:|---:|---:|---:|---:|---:|---:|
${rows%$'\n'}

Command: \`ROUNDS=$rounds perf/bench_gemm.sh\`.
<!-- gemm:end -->"
echo "bench_gemm: wrote the gemm section of perf/RESULTS.md"
