#!/usr/bin/env bash
# Mesh scaling at equal global batch (issue: 2D MPI mesh). Three runs of
# `distzo run` on the same random OPT-125m-shaped model and synthetic causal-LM
# data, global batch 8 x 128 tokens each:
#   1 rank, 2 BLAS threads          micro_batch 8
#   P=2 (2 ranks, 1 thread each)     micro_batch 8, each rank one sign of the query
#   D=2 (2 ranks, 1 thread each)     micro_batch 4 per replica
# tokens/s is the global batch's non-padding tokens over the step's wall time,
# median over the timed steps (the first step is warm-up). Efficiency per rank
# = speed-up / ranks. Writes its table between the mesh markers of
# perf/RESULTS.md (appending them if absent). Run on a quiet machine.
# Knobs: STEPS (6), PRESET (opt-125m; "small" for a smoke test), MODEL (an existing
# distzo .h5 instead), BUILD_DIR, PYTHON.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
source "$here/lib.sh"
build=${BUILD_DIR:-$root/build}
steps=${STEPS:-6}
python=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/distzo-mesh.XXXXXX")
trap 'rm -rf "$work"' EXIT

[ -x "$build/distzo" ] || { cmake -S "$root" -B "$build" >/dev/null && cmake --build "$build" --target distzo -j2; }
load=$(start_load bench_mesh)

if [ -n "${MODEL:-}" ]; then
  ln -s "$(realpath "$MODEL")" "$work/model.h5"
else
  "$python" "$here/make_random_opt.py" "$work/model.h5" --preset "${PRESET:-opt-125m}" >/dev/null
fi
vocab=$("$build/distzo" inspect "$work/model.h5" | sed -n 's/.*, vocab \([0-9]*\),.*/\1/p')
"$build/distzo" make-synthetic "$work/train.h5" --task causal_lm --examples 64 --seq-len 128 --vocab "$vocab" --seed 5 >/dev/null

run() {  # run NAME RANKS THREADS P D MICRO_BATCH
  local name=$1 ranks=$2 threads=$3 p=$4 d=$5 mb=$6
  cat > "$work/$name.yaml" <<DECK
model: { path: $work/model.h5 }
data: { train: $work/train.h5, micro_batch: $mb }
optim: { steps: $steps, lr: 1.0e-6, eps: 1.0e-3 }
output: { dir: $work/$name, log_interval: 1 }
parallel: { perturbation: $p, data: $d, check_interval: 0 }
DECK
  OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads \
    mpiexec -n "$ranks" "$build/distzo" run "$work/$name.yaml" > "$work/$name.log" 2>&1 ||
    { cat "$work/$name.log" >&2; return 1; }
  # median tokens/s over steps 2..N (column 9 of metrics.csv)
  awk -F, 'NR > 2 { print $9 }' "$work/$name/metrics.csv" | sort -g |
    awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f %.1f %.1f\n", m, v[1], v[NR] }'
}

echo "bench_mesh: 1 rank x 2 threads ..." >&2; run single 1 2 1 1 8 > "$work/single.tps"
echo "bench_mesh: P=2 ..." >&2;               run p2 2 1 2 1 8 > "$work/p2.tps"
echo "bench_mesh: D=2 ..." >&2;               run d2 2 1 1 2 4 > "$work/d2.tps"
read -r single single_min single_max < "$work/single.tps"
read -r p2 p2_min p2_max < "$work/p2.tps"
read -r d2 d2_min d2_max < "$work/d2.tps"

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
table=$(cat <<MD
<!-- mesh:begin -->
## Mesh scaling at equal global batch

\`perf/bench_mesh.sh\` ($(date -u +%Y-%m-%d), $cpu, $(nproc) cores, load ${load} at start).
Random OPT-125m-shaped model, synthetic causal-LM data, global batch 8 sequences
of up to 128 tokens, q = 1, $steps steps (first one warm-up), median (min–max)
over the timed steps. Kokkos Serial backend: only the GEMMs use the BLAS threads.

| layout | ranks x threads | tokens/s | speed-up vs 1 rank | efficiency per rank |
|---|---|---|---|---|
| 1 rank | 1 x 2 | $single ($single_min–$single_max) | 1.00 | 1.00 |
| P=2 | 2 x 1 | $p2 ($p2_min–$p2_max) | $(awk -v a="$p2" -v b="$single" 'BEGIN{printf "%.2f", a/b}') | $(awk -v a="$p2" -v b="$single" 'BEGIN{printf "%.2f", a/b/2}') |
| D=2 | 2 x 1 | $d2 ($d2_min–$d2_max) | $(awk -v a="$d2" -v b="$single" 'BEGIN{printf "%.2f", a/b}') | $(awk -v a="$d2" -v b="$single" 'BEGIN{printf "%.2f", a/b/2}') |

Each rank of either layout still generates z for every parameter (the update of
the previous step and this step's perturbation) and applies the full update to
its own copy of θ; that replicated, compute-bound work (see the fused kernel's
line above) is what keeps the efficiency per rank below 1.
<!-- mesh:end -->
MD
)
write_section mesh "$table"
echo "$table"
