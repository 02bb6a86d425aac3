#!/usr/bin/env bash
# Process limits too small for a run (issue 24). An open-files limit (ulimit
# -n) under 64 is raised when the hard limit allows, else refused with what
# to do (MPI_Init failed inside UCX). Under an address-space limit (ulimit -v:
# what a batch system's memory limit can look like) too small for the run,
# distzo ends within seconds with an error that says how much it needs, on 1
# and 2 ranks, leaving no output behind; the limit it names is enough.
# Before, OpenBLAS retried a failed buffer allocation forever, or MPI_Init
# aborted with a backtrace.
source "$(dirname "$0")/lib.sh" "$@"

deck files 2 files
set +e
(ulimit -Sn 12 && ulimit -Hn 12 && exec "$DISTZO" run files.yaml) > files.out 2> files.err
rc=$?
set -e
[ "$rc" = 2 ] || { cat files.err; fail "ulimit -n 12 (hard 12): exit status $rc, expected 2"; }
grep -q "the open-files limit of this process is ulimit -n 12 (hard limit 12); distzo needs at least 64" files.err ||
  fail "ulimit -n 12: $(cat files.err)"
pass "ulimit -n 12 with hard limit 12: $(head -c 160 files.err)"
(ulimit -Sn 12 && exec "$DISTZO" run files.yaml) > files.out 2> files.err ||
  { cat files.err; fail "ulimit -n 12 under a higher hard limit: the run failed"; }
pass "ulimit -n 12 under a higher hard limit: raised, and the run finishes"
if [[ "${ASAN_OPTIONS:-}" == *max_allocation_size_mb* ]]; then
  # AddressSanitizer reserves terabytes of address space for its shadow: no
  # process of this build starts under a limit. The plain build runs this.
  echo "ok: not applicable under AddressSanitizer (no address-space limit can hold its shadow)"
  exit 0
fi

# limited NAME KIB RANKS THREADS [ARGS...]: `distzo run NAME.yaml` on RANKS
# ranks with THREADS GEMM threads each under `ulimit -v KIB`; sets rc and
# seconds, stderr in NAME.err.
limited() {
  local name=$1 kib=$2 ranks=$3 threads=$4 start=$SECONDS
  set +e
  (ulimit -v "$kib" && OPENBLAS_NUM_THREADS=$threads exec timeout -s KILL 60 \
    "$MPIEXEC" -n "$ranks" "$DISTZO" run "$name.yaml") > "$name.out" 2> "$name.err"
  rc=$?
  set -e
  seconds=$((SECONDS - start))
}

# refused NAME KIB RANKS THREADS PATTERN: the run ends with status 2 within
# 30 s, saying PATTERN once, and leaves no output directory.
refused() {
  local name=$1 ranks=$3 pattern=$5
  deck "$name" 4 "$name" 'parallel:' "  perturbation: $ranks"
  limited "$@"
  [ "$rc" = 2 ] || { cat "$name.err"; fail "$name: exit status $rc (137: hung), expected 2"; }
  [ "$seconds" -lt 30 ] || fail "$name: took $seconds s to refuse"
  [ "$(grep -c -- "$pattern" "$name.err")" = 1 ] || { cat "$name.err"; fail "$name: '$pattern' not said once"; }
  [ ! -e "$name" ] || fail "$name: the output directory was created"
  pass "$name: $(grep -m1 -- "$pattern" "$name.err" | head -c 220)"
}

refused start1 204800 1 1 "distzo needs at least 256 MiB to start"
refused start2 204800 2 1 "distzo needs at least 256 MiB to start"
refused run1 307200 1 2 "too small for this run: it needs about"
refused run2 307200 2 1 "too small for this run: it needs about"

# What the message asks for is enough: the same run under that limit finishes.
for case in run1:1:2 run2:2:1; do
  IFS=: read -r name ranks threads <<< "$case"
  kib=$(sed -n 's/.*Raise the limit to at least ulimit -v \([0-9]*\) .*/\1/p' "$name.err" | head -1)
  [ -n "$kib" ] || fail "$name: the message names no limit: $(cat "$name.err")"
  limited "$name" "$kib" "$ranks" "$threads"
  [ "$rc" = 0 ] || { cat "$name.err"; fail "$name under the limit it asked for (ulimit -v $kib): exit status $rc"; }
  pass "$name finishes under the limit its message names (ulimit -v $kib)"
done

# `distzo forward` runs GEMMs too: refused before the BLAS would spin.
set +e
(ulimit -v 307200 && OPENBLAS_NUM_THREADS=2 exec timeout -s KILL 60 "$DISTZO" forward model.h5 \
  "$TEST_DATA/opt_tiny_preln.ref.h5" logits.h5) > forward.out 2> forward.err
rc=$?
set -e
[ "$rc" = 2 ] || { cat forward.err; fail "forward under ulimit -v 307200: exit status $rc, expected 2"; }
grep -q "forward: the address-space limit of this process is ulimit -v 307200 (300 MiB): .* Raise the limit to at least ulimit -v" forward.err ||
  fail "forward's message: $(cat forward.err)"
[ ! -e logits.h5 ] || fail "forward wrote its output anyway"
pass "forward: $(head -c 200 forward.err)"
