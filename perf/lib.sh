# Shared by the perf scripts that own a section of perf/RESULTS.md.
# write_section NAME TEXT: TEXT (which starts with `<!-- NAME:begin -->` and ends
# with `<!-- NAME:end -->`) replaces that section of perf/RESULTS.md, or is
# appended when the file has none. write_results.py keeps such sections when it
# regenerates the benchmark tables.
write_section() {
  local name=$1 text=$2 results
  results=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/RESULTS.md
  touch "$results"
  if grep -q "<!-- $name:begin -->" "$results"; then
    awk -v t="$text" -v b="<!-- $name:begin -->" -v e="<!-- $name:end -->" \
      '$0 == b { print t; skip = 1; next } $0 == e { skip = 0; next } !skip' "$results" > "$results.tmp"
    mv "$results.tmp" "$results"
  else
    printf '\n%s\n' "$text" >> "$results"
  fi
}

# start_load NAME: prints the 1-minute load average, and warns on stderr when
# it is above 0.5 (other work shares the machine: the numbers are not results).
start_load() {
  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  awk -v l="$load" 'BEGIN { exit !(l > 0.5) }' && echo "$1: warning: load average $load; numbers are not results" >&2
  echo "$load"
}

# mesh_inputs: $work/model.h5 ($MODEL, or a random ${PRESET:-opt-125m}-shaped OPT
# made with $python) and $work/train.h5, 64 synthetic causal-LM sequences of
# 128 tokens in its vocabulary: what mesh_run trains on.
mesh_inputs() {
  if [ -n "${MODEL:-}" ]; then
    ln -s "$(realpath "$MODEL")" "$work/model.h5"
  else
    "$python" "$root/tools/make_random_opt.py" "$work/model.h5" --preset "${PRESET:-opt-125m}" >/dev/null
  fi
  local vocab
  vocab=$("$build/distzo" inspect "$work/model.h5" | sed -n 's/.*, vocab \([0-9]*\),.*/\1/p')
  "$build/distzo" make-synthetic "$work/train.h5" --task causal_lm --examples 64 --seq-len 128 --vocab "$vocab" --seed 5 >/dev/null
}

# mesh_run NAME RANKS THREADS P D MICRO_BATCH DISTRIBUTION SHARE [OPTIM]: `distzo run` of
# $steps steps on $work/model.h5 and $work/train.h5 (the caller's) under mpiexec
# at OPENBLAS_NUM_THREADS=THREADS; OPTIM: more optim keys in flow style
# (", estimator: one_sided, queries: 8"). Prints "median min max" tokens/s over
# steps 2..$steps (the first is warm-up).
mesh_run() {
  local name=$1 ranks=$2 threads=$3 p=$4 d=$5 mb=$6 z=$7 share=$8 optim=${9:-}
  cat > "$work/$name.yaml" <<DECK
model: { path: $work/model.h5 }
data: { train: $work/train.h5, micro_batch: $mb }
optim: { steps: $steps, lr: 1.0e-6, eps: 1.0e-3, distribution: $z$optim }
output: { dir: $work/$name, log_interval: 1 }
parallel: { perturbation: $p, data: $d, check_interval: 0 }
placement: { share_host_master: $share }
DECK
  OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads \
    mpiexec -n "$ranks" "$build/distzo" run "$work/$name.yaml" > "$work/$name.log" 2>&1 ||
    { cat "$work/$name.log" >&2; return 1; }
  # median tokens/s over steps 2..N (column 9 of metrics.csv)
  awk -F, 'NR > 2 { print $9 }' "$work/$name/metrics.csv" | sort -g |
    awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f %.1f %.1f\n", m, v[1], v[NR] }'
}

# step_time ESTIMATOR Q [BENCH_STEP ARGS...]: "s_per_step update_ms" of one
# `bench_step --profile` run on $model at $batch x $seq, $reps timed steps (the
# caller's variables; $work holds its output). update_ms: the fused kernel's
# time a step, its host-thread region (large tensors) and its Kokkos kernel
# (small ones) together.
step_time() {
  local estimator=$1 queries=$2
  shift 2
  "$build/perf/bench_step" "$model" --batch "$batch" --seq "$seq" --reps "$reps" \
    --estimator "$estimator" --queries "$queries" "$@" --profile > "$work/out" 2>&1 || { cat "$work/out" >&2; return 1; }
  local s ms
  s=$(sed -n 's/.*"metric":"steps_per_s".*"s_per_step":"\([0-9.e+-]*\)".*/\1/p' "$work/out")
  ms=$(sed -n 's/.*"metric":"profile","median":\([0-9.e+-]*\),.*"label":"\(\[region\] \)\{0,1\}distzo::update_and_perturb".*/\1/p' "$work/out" |
    awk '{ t += $1 } END { if (NR) printf "%.4g\n", t }')
  echo "$s ${ms:-?}"
}
# median_range: the median of the numbers on stdin and their range, "m (min–max)".
median_range() { sort -g | awk '{ v[NR] = $1 } END { printf "%.4g (%.4g–%.4g)", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[1], v[NR] }'; }
# ratio A B: the ratio of two median_range cells' medians, a / b.
ratio() { awk -v a="${1%% *}" -v b="${2%% *}" 'BEGIN { printf "%.3f", a / b }'; }
