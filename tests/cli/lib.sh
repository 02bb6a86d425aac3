# Shared by the command-line tests: a scratch directory with the tiny
# pre-LN model and synthetic datasets, and small assertion helpers.
# Usage from a test: source lib.sh DISTZO TEST_DATA [MPIEXEC]
set -euo pipefail
DISTZO=$1
TEST_DATA=$2
MPIEXEC=${3:-mpiexec}
HERE=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)  # the calling test's folder
WORK=$(mktemp -d "${TMPDIR:-/tmp}/distzo-test.XXXXXX")
WORK=$(cd "$WORK" && pwd -P)  # as /proc/PID/cwd shows it

# kill_leftovers: ends every process still working in $WORK — a test's
# background run after a failure, a SLURM job step — so no test leaves a job
# running behind it.
kill_leftovers() {
  local p
  kill $(jobs -p) 2> /dev/null || true
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = "$$" ] && continue
    case "$(readlink "/proc/$p/cwd" 2> /dev/null)" in
      "$WORK" | "$WORK"/*) kill -9 "$p" 2> /dev/null || true ;;
    esac
  done
}
trap 'kill_leftovers; rm -rf "$WORK"' EXIT
cd "$WORK"
ln -s "$TEST_DATA/opt_tiny_preln.model.h5" model.h5
"$DISTZO" make-synthetic train.h5 --task classification --examples 256 --seq-len 12 --vocab 96 --seed 1 >/dev/null
"$DISTZO" make-synthetic eval.h5 --task classification --examples 128 --seq-len 12 --vocab 96 --seed 2 >/dev/null

fail() { echo "FAIL: $*" >&2; exit 1; }

# Every line of run.log starts with the UTC time it was written and a space
# ("2026-12-06T22:41:07.123Z "): a grep anchored at a message puts this before
# it ("^${STAMP}done: "; a basic and an extended regular expression alike).
STAMP='[0-9-]*T[0-9:.]*Z '
STAMP_EXACT='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z '  # grep -E
pass() { echo "ok: $*"; }

# deck NAME STEPS DIR [extra YAML lines...]: writes NAME.yaml training the tiny model
# (data.micro_batch ${MICRO_BATCH:-16}, data.batch_width $BATCH_WIDTH when set).
deck() {
  local name=$1 steps=$2 dir=$3; shift 3
  {
    printf 'model:\n  path: model.h5\n'
    printf 'data:\n  train: train.h5\n  eval: eval.h5\n  micro_batch: %s\n' "${MICRO_BATCH:-16}"
    [ -z "${BATCH_WIDTH:-}" ] || printf '  batch_width: %s\n' "$BATCH_WIDTH"
    printf 'optim:\n  steps: %s\n  lr: 1.0e-3\n  eps: 1.0e-3\n  queries: %s\n' "$steps" "${QUERIES:-1}"
    printf 'output:\n  dir: %s\n  log_interval: 1000\n' "$dir"
    printf 'eval:\n  interval: 0\n  max_examples: 64\n'
    printf '%s\n' "$@"
  } > "$name.yaml"
}

# demo_deck NAME STEPS P D [extra YAML lines...]: NAME.yaml (output.dir NAME)
# training the demo model (inputs/demo) on a P x D mesh, evaluated on
# ${EVAL_EXAMPLES:-64} of its training examples.
demo_deck() {
  local name=$1 steps=$2 p=$3 d=$4 demo=$TEST_DATA/../../inputs/demo
  shift 4
  deck "$name" "$steps" "$name" 'parallel:' "  perturbation: $p" "  data: $d" "$@"
  sed -i "s|path: model.h5|path: $demo/model.h5|; s|train: train.h5|train: $demo/train.h5|; s|eval: eval.h5|eval: $demo/train.h5|; s|max_examples: 64|max_examples: ${EVAL_EXAMPLES:-64}|" "$name.yaml"
}

# demo_run NAME THREADS RANKS P D [extra YAML lines...]: $STEPS steps of
# demo_deck at OPENBLAS_NUM_THREADS=THREADS on RANKS ranks (mpiexec when more
# than one), then the final checkpoint's digest in NAME.digest.
demo_run() {
  local name=$1 threads=$2 ranks=$3 p=$4 d=$5
  shift 5
  demo_deck "$name" "$STEPS" "$p" "$d" "$@"
  local launch=()
  [ "$ranks" -gt 1 ] && launch=("$MPIEXEC" -n "$ranks")
  OPENBLAS_NUM_THREADS=$threads "${launch[@]}" "$DISTZO" run "$name.yaml" > "$name.log" 2>&1 ||
    { cat "$name.log"; fail "$name failed"; }
  digest "$name/ckpt-$(printf %06d "$STEPS").h5" > "$name.digest"
}

# demo_resume HALF [extra YAML lines...]: HALF steps of demo_deck into
# resumed/, then a run of $STEPS that resumes from there (checkpoint.resume:
# latest); its final digest in resumed.digest.
demo_resume() {
  local half=$1
  shift
  demo_deck half "$half" 1 1 "$@"
  sed -i 's|dir: half|dir: resumed|' half.yaml
  "$DISTZO" run half.yaml > half.log 2>&1 || { cat half.log; fail "the first $half steps failed"; }
  demo_deck resumed "$STEPS" 1 1 "$@" 'checkpoint:' '  resume: latest'
  "$DISTZO" run resumed.yaml > resumed.log 2>&1 || { cat resumed.log; fail "the resume failed"; }
  grep -q "resuming from resumed/ckpt-$(printf %06d "$half").h5" resumed.log ||
    fail "did not resume from step $half: $(head -1 resumed.log)"
  digest resumed/ckpt-$(printf %06d "$STEPS").h5 > resumed.digest
}

# optim_lines NAME LINE...: the lines go right under NAME.yaml's `optim:`.
optim_lines() {
  local name=$1 text=""
  shift
  for line in "$@"; do text+="\\n$line"; done
  sed -i "s|^optim:\$|optim:$text|" "$name.yaml"
}
# estimator_lines ESTIMATOR: the optim lines of the estimator (FZOO's z for one_sided).
estimator_lines() {
  if [ "$1" = one_sided ]; then printf '%s\n' '  estimator: one_sided' '  distribution: rademacher'; else printf '%s\n' '  estimator: spsa'; fi
}
# queries_of ESTIMATOR: the queries the estimator tests use (spsa q = 2, one_sided N = 3).
queries_of() { [ "$1" = one_sided ] && echo 3 || echo 2; }

# same A B WHAT: the runs A and B left equal digests, or fail naming both.
same() {
  [ "$(cat "$1.digest")" = "$(cat "$2.digest")" ] ||
    fail "$3: $1 $(cat "$1.digest") != $2 $(cat "$2.digest")"
}
# differ A B WHAT: their digests differ.
differ() {
  [ "$(cat "$1.digest")" != "$(cat "$2.digest")" ] || fail "$3: $1 and $2 both give $(cat "$1.digest")"
}

# rank_pids DECK_NAME: the pids of the distzo ranks running DECK_NAME.yaml
# in this test's $WORK (not mpiexec, not another test's runs), one per line.
rank_pids() {
  local p
  for p in $(pgrep -f "distzo run $1.yaml"); do
    [ "$(cat "/proc/$p/comm" 2> /dev/null)" = distzo ] || continue
    [ "$(readlink "/proc/$p/cwd" 2> /dev/null)" = "$WORK" ] && echo "$p"
  done
}

# digest FILE: the parameter digest of a model or checkpoint.
digest() { "$DISTZO" inspect "$1" --digest; }

# same_datasets A B: every dataset of two HDF5 files holds the same values
# (attributes may differ, e.g. the deck), and there are more than 30 of them.
# (h5diff exits 1 for any difference, attributes included: its status is not
# the answer.)
same_datasets() {
  { h5diff -v "$1" "$2" || true; } | awk '/^dataset:/ { d = 1; n++; next } /^attribute:/ { d = 0; next }
    /differences found/ { if (d && $1 != 0) bad++; d = 0 }
    END { if (bad || n < 30) { print n " datasets compared, " bad + 0 " differ"; exit 1 } }'
}

# column FILE NAME: the values of one column of a CSV file, one per line.
column() {
  awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next } { print $c }' "$1"
}

# like_one_rank RUN ONE LABEL: RUN's metrics.csv against ONE's at the same
# global batch, step by step. Data parallelism computes the same estimator,
# but not the same bits: the replicas sum the loss in another order, and their
# GEMMs start at other rows of the batch, which changes the rounding where the
# BLAS's result for a row depends on its position in the call (OpenBLAS's Zen
# kernels: the row's position mod 12; docs/formats.md, "What reproducible
# means"). So: step 1, at the same θ, L+ and L- within 1e-6 relative (a wrong
# replica, batch or weighting is off by far more); later steps, once θ carries
# the rounding of the updates, within 1e-5 (seen: 4e-6 after 20 steps on a Zen
# EPYC); g within 1e-3 at every step (it divides a difference by 2 eps).
like_one_rank() {
  local c
  for c in loss_plus loss_minus; do
    column "$2/metrics.csv" $c > a.txt; column "$1/metrics.csv" $c > b.txt
    head -n 1 a.txt > a1.txt; head -n 1 b.txt > b1.txt
    close_rel b1.txt a1.txt 1e-6 || fail "$3: step 1's $c differs from 1 rank by more than 1e-6 relative"
    close_rel b.txt a.txt 1e-5 || fail "$3: $c differs from 1 rank by more than 1e-5 relative"
  done
  column "$2/metrics.csv" g > a.txt; column "$1/metrics.csv" g > b.txt
  close_rel b.txt a.txt 1e-3 || fail "$3: g differs from 1 rank by more than 1e-3 relative"
}

# close_rel A_FILE B_FILE TOL: every pair of lines agrees to TOL relative.
close_rel() {
  paste -d' ' "$1" "$2" | awk -v tol="$3" '
    { d = $1 - $2; if (d < 0) d = -d; s = ($2 < 0 ? -$2 : $2); if (d > tol * s + 1e-12) { bad++; if (!w) w = NR ": " $1 " vs " $2 } }
    END { if (bad) { print bad " values differ beyond " tol " relative, first at line " w; exit 1 } }'
}
