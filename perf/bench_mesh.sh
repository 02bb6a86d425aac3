#!/usr/bin/env bash
# Mesh scaling at equal global batch (2D MPI mesh, Placement II). `distzo run`
# on the same random OPT-125m-shaped model and synthetic causal-LM data,
# global batch 8 x 128 tokens each, for Gaussian and Rademacher z:
#   1 rank, 2 BLAS threads                micro_batch 8
#   P=2 (2 ranks, 1 thread each)           micro_batch 8, each rank one sign of the query
#   D=2 (2 ranks, 1 thread each)           micro_batch 4 per replica
# P=2 and D=2 run twice: with the node-shared, sliced master (the default on
# one node: placement.share_host_master auto) and replicated (false).
# tokens/s is the global batch's non-padding tokens over the step's wall time,
# median over the timed steps (the first step is warm-up). Efficiency per rank
# = speed-up / ranks. Then bench_step --profile on 1 rank and on each 2-rank
# mesh gives every rank's time in update_and_perturb for one step.
# Writes its table between the mesh markers of perf/RESULTS.md (appending
# them if absent). Run on a quiet machine.
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

[ -x "$build/distzo" ] && [ -x "$build/perf/bench_step" ] ||
  { cmake -S "$root" -B "$build" >/dev/null && cmake --build "$build" --target distzo bench_step -j2; }
load=$(start_load bench_mesh)

mesh_inputs

# table DISTRIBUTION: the rows of one distribution's table.
table_rows() {
  local z=$1 single single_min single_max
  echo "bench_mesh: $z z, 1 rank x 2 threads ..." >&2
  read -r single single_min single_max < <(mesh_run "single_$z" 1 2 1 1 8 "$z" false)
  echo "| 1 rank | 1 x 2 | – | $single ($single_min–$single_max) | 1.00 | 1.00 |"
  local layout share ranks p d mb label tps tmin tmax
  for layout in P=2 D=2; do
    for share in true false; do
      if [ "$layout" = P=2 ]; then p=2 d=1 mb=8; else p=1 d=2 mb=4; fi
      label=$([ "$share" = true ] && echo "shared, sliced" || echo "replicated")
      echo "bench_mesh: $z z, $layout $label ..." >&2
      read -r tps tmin tmax < <(mesh_run "${layout/=/}_${share}_$z" 2 1 "$p" "$d" "$mb" "$z" "$share")
      echo "| $layout | 2 x 1 | $label | $tps ($tmin–$tmax) | $(awk -v a="$tps" -v b="$single" 'BEGIN{printf "%.2f", a/b}') | $(awk -v a="$tps" -v b="$single" 'BEGIN{printf "%.2f", a/b/2}') |"
    done
  done
}

# update_and_perturb per rank for one step (bench_step --profile), in ms: a
# Kokkos kernel on one thread, a region when the host threads run it.
profile() {  # profile RANKS THREADS MESH SHARE: the ms of each rank, space-separated
  OPENBLAS_NUM_THREADS=$2 OMP_NUM_THREADS=$2 mpiexec -n "$1" "$build/perf/bench_step" "$work/model.h5" \
    --reps 2 --mesh "$3" --share "$4" --profile 2>/dev/null |
    awk -F'"median":' '/"label":"(\[region\] )?distzo::update_and_perturb"/ { split($2, v, ","); printf "%s%.1f", (n++ ? " / " : ""), v[1] }'
}

gaussian_rows=$(table_rows gaussian)
rademacher_rows=$(table_rows rademacher)
echo "bench_mesh: profiles ..." >&2
u_single=$(profile 1 2 1x1 false)
u_p2=$(profile 2 1 2x1 true)
u_d2=$(profile 2 1 1x2 true)
u_p2_replicated=$(profile 2 1 2x1 false)
ratio() { awk -v list="$1" -v base="$u_single" 'BEGIN { n = split(list, v, " / "); m = 0; for (i = 1; i <= n; i++) if (v[i] + 0 > m) m = v[i] + 0; printf "%.2f", m / base }'; }

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
header='| layout | ranks x threads | θ master | tokens/s | speed-up vs 1 rank | efficiency per rank |
|---|---|---|---|---|---|'
table=$(cat <<MD
<!-- mesh:begin -->
## Mesh scaling at equal global batch

\`perf/bench_mesh.sh\` ($(date -u +%Y-%m-%d), $cpu, $(nproc) cores, load ${load} at start).
Random OPT-125m-shaped model, synthetic causal-LM data, global batch 8 sequences
of up to 128 tokens, q = 1, $steps steps (first one warm-up), median (min–max)
over the timed steps. Kokkos Serial backend: only the GEMMs use the BLAS threads.
"Shared, sliced": one θ master per node in shared memory, each rank updating
and perturbing half of every group (Placement II, the default with two ranks on
a node); "replicated": every rank its own θ, the whole update and perturbation.

Gaussian z (recipe 2):

$header
$gaussian_rows

Rademacher z (no transcendental function: what remains when z is cheap):

$header
$rademacher_rows

Time in \`update_and_perturb\` per rank for one step with a pending update
(\`bench_step --profile\`, batch 8 x 128 per replica, Gaussian): 1 rank × 2
threads ${u_single} ms; P=2 shared ${u_p2} ms (largest ÷ 1 rank = $(ratio "$u_p2"));
D=2 shared ${u_d2} ms ($(ratio "$u_d2")); P=2 replicated ${u_p2_replicated} ms ($(ratio "$u_p2_replicated")).
On two cores the 1-rank baseline already runs its GEMMs (most of a forward)
on both cores, so a second rank can win only what the baseline runs on one
core: the update and perturbation (sliced: each rank makes z for half of θ,
the profile above) and the forward's non-GEMM kernels. Replicated ranks repeat
the whole z work; with cheap (Rademacher) z little is left to win.
<!-- mesh:end -->
MD
)
write_section mesh "$table"
echo "$table"
