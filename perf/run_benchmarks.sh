#!/usr/bin/env bash
# Builds the distzo benchmarks (if needed), makes a random OPT-125m-shaped
# model in a temp dir, and runs every benchmark next to its PyTorch baseline at
# equal settings, once per thread count (default: 1, then 2), then writes
# perf/RESULTS.md (and the full log as perf/RESULTS.log). See perf/README.md.
#
#   perf/run_benchmarks.sh                 # the real thing: run it on a QUIET machine
#   perf/run_benchmarks.sh --quick         # small model, minimal reps: checks the scripts (~1 min)
#   perf/run_benchmarks.sh --smoke-label   # full sizes, but RESULTS.md says "smoke test, not results"
#   perf/run_benchmarks.sh --model M.h5    # use an existing distzo model file instead
#   perf/run_benchmarks.sh --threads "1 2 4" --out /tmp/R.md
#
# Environment (defaults in brackets): BUILD_DIR [build-perf], JOBS [2], PYTHON [python3],
# BATCH [8], SEQ [128], WARMUP [1], FORWARD_REPS [5], STEP_REPS [3], QUERIES [1],
# PERTURB_ELEMENTS [16777216], PERTURB_REPS [5], PERTURB_RUNS [5], ATTN [sdpa], SEED [1],
# MODEL_SEED [1234], Z_SAMPLES [100000000].
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

THREADS="1 2"
OUT="$ROOT/perf/RESULTS.md"
MODEL=""
QUICK=0
SMOKE=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) QUICK=1; SMOKE=1; shift ;;
    --smoke-label) SMOKE=1; shift ;;
    --model) MODEL="$(realpath "$2")"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --out) OUT="$(realpath -m "$2")"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_benchmarks.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

BUILD_DIR="${BUILD_DIR:-$ROOT/build-perf}"
JOBS="${JOBS:-2}"
PYTHON="${PYTHON:-python3}"
BATCH="${BATCH:-8}"
SEQ="${SEQ:-128}"
WARMUP="${WARMUP:-1}"
FORWARD_REPS="${FORWARD_REPS:-5}"
STEP_REPS="${STEP_REPS:-3}"
QUERIES="${QUERIES:-1}"
PERTURB_ELEMENTS="${PERTURB_ELEMENTS:-16777216}"
PERTURB_REPS="${PERTURB_REPS:-5}"
PERTURB_RUNS="${PERTURB_RUNS:-5}"
Z_SAMPLES="${Z_SAMPLES:-100000000}"
ATTN="${ATTN:-sdpa}"
SEED="${SEED:-1}"
MODEL_SEED="${MODEL_SEED:-1234}"
PRESET="opt-125m"
if [[ $QUICK == 1 ]]; then
  PRESET="small"
  FORWARD_REPS=3; STEP_REPS=3; PERTURB_REPS=3; PERTURB_ELEMENTS=1048576; PERTURB_RUNS=1; Z_SAMPLES=1000000
fi

START=$(date +%s)
WORK="$(mktemp -d "${TMPDIR:-/tmp}/distzo-perf.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
LOG="$WORK/run.log"
: > "$LOG"

say() { echo "[run_benchmarks] $*"; }

# --- build -------------------------------------------------------------------
say "build: $BUILD_DIR (targets bench_forward bench_perturb bench_step bench_z_statistics, -j$JOBS)"
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DDISTZO_ENABLE_TESTS=OFF \
    -DDISTZO_ENABLE_PERF=ON > "$WORK/cmake.log" || { cat "$WORK/cmake.log"; exit 1; }
fi
cmake --build "$BUILD_DIR" --target bench_forward bench_perturb bench_step bench_z_statistics -j"$JOBS" > "$WORK/build.log" \
  || { tail -50 "$WORK/build.log"; exit 1; }
BIN="$BUILD_DIR/perf"
[[ "$BIN" == "$ROOT/"* ]] && BIN="${BIN#"$ROOT"/}"   # shorter commands in RESULTS.md (we run from $ROOT)
BUILD_TYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD_DIR/CMakeCache.txt")
CXX=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")
[[ "$BUILD_TYPE" == "Release" ]] || say "WARNING: $BUILD_DIR is a '$BUILD_TYPE' build, not Release"

# --- model -------------------------------------------------------------------
if [[ -z "$MODEL" ]]; then
  MODEL="$WORK/opt-$PRESET-random.h5"
  say "model: random $PRESET (seed $MODEL_SEED) -> $MODEL"
  "$PYTHON" tools/make_random_opt.py "$MODEL" --preset "$PRESET" --seed "$MODEL_SEED" | tee "$WORK/model.txt"
  MODEL_DESC="random OPT ($PRESET preset, transformers init, seed $MODEL_SEED): $(sed -n 's/^wrote [^:]*: //p' "$WORK/model.txt")"
else
  MODEL_DESC="$MODEL (given with --model)"
fi

{
  echo "### META date=$(date -Iseconds)"
  echo "### META host=$(uname -n) ($(uname -sr))"
  echo "### META compiler=$("$CXX" --version | head -1), CMAKE_BUILD_TYPE=$BUILD_TYPE"
  echo "### META model_desc=$MODEL_DESC"
  echo "### META model_path=$MODEL"
  echo "### META loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
} >> "$LOG"
read -r LOAD1 _ < /proc/loadavg
if awk -v l="$LOAD1" 'BEGIN { exit !(l > 0.5) }'; then
  say "WARNING: load average is $LOAD1 — other work is running; the numbers will not be valid"
fi

# --- run ---------------------------------------------------------------------
# run N CMD...: runs CMD with every thread knob set to N, logging a marker line
# (read by perf/write_results.py) and the output.
run() {
  local n="$1"; shift
  local envs=("OPENBLAS_NUM_THREADS=$n" "OMP_NUM_THREADS=$n" "MKL_NUM_THREADS=$n")
  local t0; t0=$(date +%s)
  echo "### RUN threads=$n cmd=${envs[*]} $*" >> "$LOG"
  say "[threads=$n] $*"
  env "${envs[@]}" "$@" 2>&1 | tee -a "$LOG" | grep -v '^RESULT ' | sed 's/^/    /'
  say "    ($(( $(date +%s) - t0 )) s)"
}

for n in $THREADS; do
  run "$n" "$BIN/bench_forward" "$MODEL" --batch "$BATCH" --seq "$SEQ" --reps "$FORWARD_REPS" \
    --warmup "$WARMUP" --seed "$SEED" --profile
  run "$n" "$PYTHON" tools/torch_forward_bench.py "$MODEL" --batch "$BATCH" --seq "$SEQ" \
    --reps "$FORWARD_REPS" --warmup "$WARMUP" --threads "$n" --seed "$SEED" --attn "$ATTN"
  run "$n" "$BIN/bench_step" "$MODEL" --batch "$BATCH" --seq "$SEQ" --reps "$STEP_REPS" \
    --warmup "$WARMUP" --queries "$QUERIES" --seed "$SEED" --profile
  run "$n" "$PYTHON" tools/mezo_reference.py --bench --model "$MODEL" --batch "$BATCH" --seq "$SEQ" \
    --steps "$STEP_REPS" --warmup "$WARMUP" --threads "$n" --seed "$SEED" --attn "$ATTN"
  # Several runs: on a shared VM one run's deep_copy baseline varies by up to a third.
  for _ in $(seq "$PERTURB_RUNS"); do
    run "$n" "$BIN/bench_perturb" --elements "$PERTURB_ELEMENTS" --reps "$PERTURB_REPS" --warmup "$WARMUP"
  done
done
# Normality of z on Z_SAMPLES samples per recipe (a check, single-threaded; ~30 s at 10^8).
run 1 "$BIN/bench_z_statistics" --samples "$Z_SAMPLES"

WALL=$(( $(date +%s) - START ))
{
  echo "### META wall_s=$WALL"
  echo "### META loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)"
} >> "$LOG"
SMOKE_ARG=()
[[ $SMOKE == 1 ]] && SMOKE_ARG=(--smoke)
"$PYTHON" perf/write_results.py "$LOG" --out "$OUT" "${SMOKE_ARG[@]}"
cp "$LOG" "${OUT%.md}.log"
say "done in $WALL s; log: ${OUT%.md}.log"
