#!/usr/bin/env bash
# The tiled host GEMM (kernels/host_gemm.hpp: tiles fixed by each GEMM's
# shape, one single-threaded BLAS call each, distzo's own threads) against the
# path before it (DISTZO_GEMM=library: one KokkosBlas::gemm call on
# OpenBLAS's threads), in the same binaries, alternated: bench_forward and
# bench_step on a random OPT-125m-shaped model (`distzo make-model --config
# perf/opt_configs/opt-125m.json`), batch 8 x 128, at 1 and 2 threads
# (OPENBLAS_NUM_THREADS=n, which choose_blas_threads gives to the path chosen).
# Each benchmark runs with --gemm-paths N: N pairs of repetitions in one
# process, one on each path, the order swapped every pair (seconds apart, so
# both see the same machine); the ratio is the median of the per-pair ratios
# tiled / library (above 1: the tiles are slower). Writes its table between
# the gemm markers of perf/RESULTS.md. Run on a quiet machine. Knobs:
# FORWARD_PAIRS (7), STEP_PAIRS (5), THREADS ("1 2"), BATCH (8), SEQ (128),
# BUILD_DIR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
source "$here/lib.sh"
build=${BUILD_DIR:-$root/build}
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

field() { grep '"metric":"gemm_paths"' "$1" | sed -n "s/.*\"$2\":\"\{0,1\}\([^\",]*\)\"\{0,1\}[,}].*/\1/p"; }

declare -A log
for t in $threads_list; do
  for b in forward step; do
    pairs=${FORWARD_PAIRS:-7}
    [ $b = step ] && pairs=${STEP_PAIRS:-5}
    log[$b.$t]=$work/$b.$t.log
    OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=1 "$build/perf/bench_$b" "$work/model.h5" --batch "$batch" \
      --seq "$seq_len" --reps 1 --gemm-paths "$pairs" > "${log[$b.$t]}" 2>&1 ||
      { cat "${log[$b.$t]}" >&2; exit 1; }
    grep -q '"gemm":"tiled x'"$t"'"' "${log[$b.$t]}" || { echo "bench_gemm: ${log[$b.$t]} did not run $t thread(s)" >&2; exit 1; }
    grep '^gemm paths' "${log[$b.$t]}" | sed "s/^/bench_gemm: $b, /" >&2
  done
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
if grep -qw avx512f /proc/cpuinfo; then cpu+=" (AVX-512)"; elif grep -qw avx2 /proc/cpuinfo; then cpu+=" (AVX2, no AVX-512)"; fi
blas=$(sed -n '/^blas *: /{s/^blas *: //; s/; threads .*//; p}' "$work"/forward.*.log | head -1)
cell() {  # cell LOG: "library median (min) | tiled median (min) | ratio median (min–max); every pair"
  local l=$1
  awk -v lm="$(field "$l" library_median_s)" -v ln="$(field "$l" library_min_s)" -v tm="$(field "$l" tiled_median_s)" \
    -v tn="$(field "$l" tiled_min_s)" -v r="$(field "$l" median)" -v rn="$(field "$l" min)" -v rx="$(field "$l" max)" \
    -v all="$(field "$l" ratios)" \
    'BEGIN { printf "%.4g (%.4g) | %.4g (%.4g) | **%.3f×** (%.3f–%.3f; %s)", lm, ln, tm, tn, r, rn, rx, all }'
}
rows=""
for t in $threads_list; do
  rows+="| $t | $(cell "${log[forward.$t]}") | $(cell "${log[step.$t]}") |"$'\n'
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

write_section gemm "<!-- gemm:begin -->
## Host GEMM: tiles fixed by the shape vs the BLAS's own threads

Written by \`perf/bench_gemm.sh\` on $(date -u +%Y-%m-%dT%H:%M:%SZ) ($(( $(date +%s) - started )) s). CPU: $cpu, $(nproc) logical CPUs; BLAS: ${blas:-?}. Random OPT-125m shape (\`distzo make-model --config perf/opt_configs/opt-125m.json --seed 1\`), batch $batch × seq $seq_len. **library** = \`DISTZO_GEMM=library\`: one \`KokkosBlas::gemm\` call on OpenBLAS's threads, the path before issue 21 (its bits may change with the thread count); **tiled** = the default: C cut in two halves fixed by each GEMM's shape (of the tokens; of the vocabulary for the LM head), one single-threaded BLAS call each, spread over distzo's threads (bits independent of the thread count). Same binaries, one process per cell: \`--gemm-paths N\` runs N pairs of repetitions, one on each path, the order swapped every pair, after one untimed repetition on each; times are the median (min) over the pairs, the ratio is the median (min–max; every pair's) of the per-pair ratios tiled / library (above 1: the tiles are slower). Load average (1, 5, 15 min) at start: $load_start, at end: $load_end — anything well above 0 means other work shared the machine.

| threads | forward s, library | forward s, tiled | forward tiled / library | step s, library | step s, tiled | step tiled / library |
|---:|---:|---:|---:|---:|---:|---:|
${rows%$'\n'}

Command: \`FORWARD_PAIRS=${FORWARD_PAIRS:-7} STEP_PAIRS=${STEP_PAIRS:-5} perf/bench_gemm.sh\` (\`bench_forward MODEL --reps 1 --gemm-paths N\`, \`bench_step MODEL --reps 1 --gemm-paths N\` at \`OPENBLAS_NUM_THREADS=n\`).
<!-- gemm:end -->"
echo "bench_gemm: wrote the gemm section of perf/RESULTS.md"
