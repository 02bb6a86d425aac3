#!/usr/bin/env bash
# Fine-tuning quality of a 2-byte master of θ against the float32 master on
# the real model (issue 22 item 6): inputs/smollm2_quick.yaml (SmolLM2-135M,
# 60 MeZO steps, lr 1e-4, micro-batch 16, prompt A) run with
# precision.storage fp32, bf16 + stochastic rounding, bf16 + round to nearest
# and fp16 + stochastic rounding, over optim.seed 1, 2, 3 (shuffle_seed stays 1:
# every run sees the same micro-batches), then perf/rounding_study on a run's
# updates (the fraction of element updates each 2-byte master loses, at the
# deck's lr, lr/10 and lr/100). Results: perf/REAL_MODEL_RESULTS.md, section
# "bf16 and fp16 masters".
#
#   perf/quality_study.sh MODEL_DIR RUN_DIR [RUN...]      train the named runs (default: all, in priority order)
#   perf/quality_study.sh --rounding MODEL_DIR RUN_DIR    rounding_study on RUN_DIR/fp32-s1's updates
#   perf/quality_study.sh --table RUN_DIR [--plot PNG]    the markdown tables (and the plot): perf/quality_study.py
#
#   MODEL_DIR  the OUT_DIR of tools/make_real_model.sh (holds smollm2-135m-instruct.h5
#              and data-demo-template/{train,test}.h5)
#   RUN_DIR    where decks (RUN_DIR/decks/NAME.yaml), run outputs (RUN_DIR/NAME/)
#              and logs (RUN_DIR/NAME.log, with a "<seconds> s wall" line) go
#   RUN        NAME = PRECISION-sSEED[-STEPS], PRECISION one of fp32, bf16sr,
#              bf16rn, fp16sr, fp16rn; STEPS defaults to the deck's 60,
#              e.g. fp32-s1, bf16sr-s2, bf16sr-s1-300
#
# Environment: DISTZO (default build/distzo of this checkout), ROUNDING_STUDY
# (default build/perf/rounding_study), PYTHON (python3 with matplotlib, for
# --table), OPENBLAS_NUM_THREADS (default 1: one core). A run whose eval.csv
# already has its final row is skipped, so an interrupted study resumes.
# Runs are sequential, nice'd (a shared machine). One 60-step run takes about
# 12 minutes on one core of the AMD EPYC of perf/REAL_MODEL_RESULTS.md, half of
# it in the two evaluations of 1000 sentences; its checkpoint is 513 MiB.

set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DISTZO=${DISTZO:-$REPO/build/distzo}
ROUNDING_STUDY=${ROUNDING_STUDY:-$REPO/build/perf/rounding_study}
PY=${PYTHON:-python3}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$OPENBLAS_NUM_THREADS}
DEFAULT_RUNS=(fp32-s1 bf16sr-s1 fp32-s2 bf16sr-s2 fp32-s3 bf16sr-s3
              bf16rn-s1 bf16rn-s2 bf16rn-s3 fp16sr-s1 fp32-s1-300 bf16sr-s1-300)

usage() { sed -n '12,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "quality_study: error: $*" >&2; exit 1; }

if [[ "${1:-}" == "--table" ]]; then
    [[ $# -ge 2 ]] || usage
    shift
    exec "$PY" "$REPO/perf/quality_study.py" "$@"
fi
ROUNDING=0
if [[ "${1:-}" == "--rounding" ]]; then
    ROUNDING=1
    shift
fi
[[ $# -ge 2 && "${1:-}" != -* ]] || usage
MODEL_DIR=$(cd "$1" && pwd)
RUN_DIR=$(mkdir -p "$2" && cd "$2" && pwd)
shift 2
MODEL=$MODEL_DIR/smollm2-135m-instruct.h5
[[ -f "$MODEL" && -f "$MODEL_DIR/data-demo-template/train.h5" ]] ||
    die "$MODEL_DIR: no smollm2-135m-instruct.h5 and data-demo-template/ (run tools/make_real_model.sh $MODEL_DIR)"

if [[ $ROUNDING == 1 ]]; then
    [[ $# == 0 ]] || usage
    [[ -x "$ROUNDING_STUDY" ]] || die "no rounding_study at $ROUNDING_STUDY (set ROUNDING_STUDY)"
    metrics=$RUN_DIR/fp32-s1/metrics.csv
    [[ -f "$metrics" ]] || die "$metrics: run fp32-s1 first"
    log=$RUN_DIR/rounding-fp32-s1.log
    echo "rounding_study on $metrics -> $log"
    /usr/bin/time -f "%e s wall, %M KiB max RSS" nice -n 19 "$ROUNDING_STUDY" \
        --model "$MODEL" --metrics "$metrics" --seed 1 > "$log" 2>&1
    cat "$log"
    exit 0
fi

[[ -x "$DISTZO" ]] || die "no distzo at $DISTZO (set DISTZO)"
(( $# )) || set -- "${DEFAULT_RUNS[@]}"
mkdir -p "$RUN_DIR/decks"
for name in "$@"; do
    [[ "$name" =~ ^(fp32|bf16sr|bf16rn|fp16sr|fp16rn)-s([0-9]+)(-([0-9]+))?$ ]] || die "bad run name '$name'"
    prec=${BASH_REMATCH[1]} seed=${BASH_REMATCH[2]} steps=${BASH_REMATCH[4]:-60}
    case $prec in
        fp32) storage=fp32 rounding=stochastic ;;
        bf16sr) storage=bf16 rounding=stochastic ;;
        bf16rn) storage=bf16 rounding=nearest ;;
        fp16sr) storage=fp16 rounding=stochastic ;;
        fp16rn) storage=fp16 rounding=nearest ;;
    esac
    deck=$RUN_DIR/decks/$name.yaml
    out=$RUN_DIR/$name
    # The final evaluation's row (step = steps) in eval.csv: the run finished.
    if [[ -f "$out/eval.csv" ]] && awk -F, -v s="$steps" 'NR > 1 && $1 == s { f = 1 } END { exit !f }' "$out/eval.csv"; then
        echo "$name: done ($out/eval.csv), skipped"
        continue
    fi
    sed -e "s#out/smollm2/#$MODEL_DIR/#g" -e "s#out/smollm2-quick#$out#g" \
        -e "s#^  seed: 1\$#  seed: $seed#" -e "s#^  steps: 60\$#  steps: $steps#" \
        "$REPO/inputs/smollm2_quick.yaml" > "$deck"
    note=""
    [[ $storage == fp32 ]] && note="   # ignored with fp32"
    printf '\nprecision:\n  storage: %s\n  rounding: %s%s\n' "$storage" "$rounding" "$note" >> "$deck"
    if ! grep -q "^  seed: $seed\$" "$deck" || ! grep -q "^  steps: $steps\$" "$deck"; then
        die "$deck: seed/steps not set"
    fi
    rm -rf "$out"
    echo "$name: $(date -u +%H:%M:%S) $DISTZO run $deck  (OPENBLAS_NUM_THREADS=$OPENBLAS_NUM_THREADS)"
    /usr/bin/time -f "%e s wall" nice -n 19 "$DISTZO" run "$deck" > "$RUN_DIR/$name.log" 2>&1 ||
        die "$name failed: $RUN_DIR/$name.log"
    tail -n 1 "$RUN_DIR/$name.log"
done
