#!/usr/bin/env bash
# Perturbation parallelism beyond two evaluations a step (issue 57, the
# DistZO2 review's higher-dimensional grid): a one-sided step (FZOO's,
# optim.estimator one_sided) with N = 8 directions has N + 1 = 9 forward
# evaluations, spread over P = 1, 3 or 9 ranks of one perturbation group, at
# equal global batch (D = 1, micro-batch 8 x 128 tokens on every layout).
# `distzo run` on a random OPT-125m-shaped model and synthetic causal-LM data,
# Rademacher z (FZOO's), θ shared by the node's ranks (placement auto). Each
# layout gets the machine's cores: P ranks x (cores / P) BLAS threads.
# tokens/s is the global batch's non-padding tokens over the step's wall
# time, median over the timed steps (the first is warm-up); speed-up against
# P = 1 and efficiency = speed-up / P.
# Needs at least max(P) cores: with fewer the ranks share cores and the
# numbers say nothing about scaling, so the script refuses unless
# FORCE=1 (a smoke test of the script; nothing is written then).
# Writes its table between the mesh-one-sided markers of perf/RESULTS.md.
# Knobs: P_LIST ("1 3 9"), STEPS (6), PRESET (opt-125m; "small" for a smoke test),
# MODEL (an existing distzo .h5), FORCE, BUILD_DIR, PYTHON.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
source "$here/lib.sh"
build=${BUILD_DIR:-$root/build}
steps=${STEPS:-6}
python=${PYTHON:-python3}
p_list=${P_LIST:-1 3 9}
cores=$(nproc)
most=$(printf '%s\n' $p_list | sort -n | tail -1)
if [ "$cores" -lt "$most" ] && [ "${FORCE:-0}" != 1 ]; then
  echo "bench_mesh_one_sided: P up to $most needs $most cores; this machine has $cores (FORCE=1 runs it as a smoke test and writes nothing)" >&2
  exit 2
fi
for p in $p_list; do
  [ $((9 % p)) -eq 0 ] || { echo "bench_mesh_one_sided: P = $p does not divide the 9 evaluations of a step (1, 3, 9)" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/distzo-mesh-one-sided.XXXXXX")
trap 'rm -rf "$work"' EXIT

[ -x "$build/distzo" ] || { cmake -S "$root" -B "$build" >/dev/null && cmake --build "$build" --target distzo -j2; }
load=$(start_load bench_mesh_one_sided)
mesh_inputs

rows="" base=""
for p in $p_list; do
  threads=$((cores / p > 0 ? cores / p : 1))
  echo "bench_mesh_one_sided: P = $p ($p ranks x $threads threads) ..." >&2
  read -r tps tmin tmax < <(mesh_run "p$p" "$p" "$threads" "$p" 1 8 rademacher auto ", estimator: one_sided, queries: 8")
  [ -n "$base" ] || base=$tps
  rows+="| P = $p | $p x $threads | $((9 / p)) | $tps ($tmin–$tmax) | $(awk -v a="$tps" -v b="$base" 'BEGIN { printf "%.2f", a / b }') | $(awk -v a="$tps" -v b="$base" -v p="$p" 'BEGIN { printf "%.2f", a / b / p }') |"$'\n'
done

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
text="<!-- mesh-one-sided:begin -->
## One-sided steps over P = $(echo $p_list | tr ' ' ',') ranks at equal global batch (\`perf/bench_mesh_one_sided.sh\`)

$(date -u +%Y-%m-%d), $cpu, $cores cores, load $load at the start. FZOO's step (one_sided,
N = 8 Rademacher directions: 9 forward evaluations) on a random ${PRESET:-opt-125m}-shaped OPT,
global batch 8 x 128 tokens (D = 1), the node's θ shared; $steps steps, median (min–max) over
the timed ones:

| layout | ranks x threads | evaluations per rank | tokens/s | speed-up vs P = 1 | efficiency per rank |
|---|---|---|---|---|---|
${rows}<!-- mesh-one-sided:end -->"
echo "$text"
if [ "$cores" -lt "$most" ]; then
  echo "bench_mesh_one_sided: FORCE=1 on $cores cores: a smoke test, not written to perf/RESULTS.md" >&2
else
  write_section mesh-one-sided "$text"
fi
