#!/usr/bin/env bash
# Under any address-space limit (ulimit -v: what a batch system's memory
# limit can look like) distzo either runs or refuses with its own message,
# in bounded time: never a hang (OpenBLAS retrying a buffer forever, a fork
# waiting on its threads) and never a foreign abort (MPI's transport failing
# in MPI_Init, OpenBLAS's constructor raising SIGINT, HDF5 dereferencing an
# allocation that failed in H5Fopen with MPI started just under the limit). The limit is swept
# from 64 MiB upwards in 16 MiB steps until the run finishes, on 1 and 2
# ranks with 1 and 2 GEMM threads each; no threshold of one machine is
# assumed: where refusal ends and the run starts is whatever this machine,
# its libraries and its CPU make it. Below the lowest limits the dynamic
# loader itself refuses (exit 127, "error while loading shared libraries:
# ... failed to map segment"): before distzo has any code running, and
# accepted only there, below every limit at which distzo spoke.
source "$(dirname "$0")/lib.sh" "$@"

if [[ "${ASAN_OPTIONS:-}" == *max_allocation_size_mb* ]]; then
  # AddressSanitizer reserves terabytes of address space for its shadow.
  echo "ok: not applicable under AddressSanitizer (no address-space limit can hold its shadow)"
  exit 0
fi

deck sweep 4 sweep
deck sweep2 4 sweep2 'parallel:' '  perturbation: 2'
readonly STEP_KIB=$((16 * 1024)) FIRST_KIB=$((64 * 1024)) LAST_KIB=$((4096 * 1024))
readonly SECONDS_PER_TRY=60  # a refusal takes well under a second: this is a hang

# try RANKS THREADS KIB: one run under the limit (every rank under it; the
# launcher is not distzo's), its status in rc, its stderr in try.err, its
# output directory in name.
try() {
  local ranks=$1 threads=$2 kib=$3 launch=()
  name=sweep
  [ "$ranks" = 1 ] || { name=sweep2; launch=("$MPIEXEC" -n "$ranks"); }
  rm -rf "$name"
  set +e
  OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads timeout -s KILL "$SECONDS_PER_TRY" "${launch[@]}" \
    bash -c 'ulimit -v "$1" && exec "$2" run "$3"' limited "$kib" "$DISTZO" "$name.yaml" \
    > try.out 2> try.err
  rc=$?
  set -e
}

# advice: the limit the last refusal asked for.
advice() { sed -n 's/.*Raise the limit to at least ulimit -v \([0-9]*\) .*/\1/p' try.err | head -1; }

for case in 1:1 1:2 2:1 2:2; do
  IFS=: read -r ranks threads <<< "$case"
  refusals=0 run_refusals=0 loader=0 asked=
  for ((kib = FIRST_KIB; ; kib += STEP_KIB)); do
    [ "$kib" -le "$LAST_KIB" ] || fail "$ranks rank(s), $threads thread(s): no run finished under ulimit -v $LAST_KIB"
    try "$ranks" "$threads" "$kib"
    what="$ranks rank(s) x $threads GEMM thread(s) under ulimit -v $kib ($((kib / 1024)) MiB)"
    # The loader's refusal: exit 127, or under mpiexec whatever the launcher
    # makes of ranks that never started (141, SIGPIPE, seen here; once, under
    # a load of 6 on 2 cores, with the loader's line lost too: nothing on
    # stderr at all).
    if [ "$rc" != 0 ] && [ "$rc" != 2 ] && [ "$rc" != 137 ] && [ "$refusals" = 0 ] &&
      { grep -q "error while loading shared libraries: .*failed to map segment" try.err ||
        { [ "$rc" = 141 ] && [ ! -s try.err ]; }; } &&
      ! grep -q "^distzo: " try.err; then
      loader=$((loader + 1))
      continue
    fi
    case "$rc" in
      0) break ;;
      2)
        grep -q "^distzo: error.*address-space limit of this process is ulimit -v $kib" try.err ||
          { cat try.err; fail "$what: exit status 2 without distzo's message on the limit"; }
        [ -n "$(advice)" ] || { cat try.err; fail "$what: the refusal names no limit to ask for"; }
        ! grep -q "Raise the limit.*Raise the limit" try.err ||
          { cat try.err; fail "$what: one message, two limits to ask for"; }
        [ ! -e "$name/metrics.csv" ] ||
          fail "$what: refused, but the run had started writing"
        refusals=$((refusals + 1))
        if grep -q "too small for this run: it needs about" try.err; then
          run_refusals=$((run_refusals + 1))
          asked=$(advice)
        fi
        ;;
      137) cat try.err; fail "$what: no end within $SECONDS_PER_TRY s (hung)" ;;
      *) cat try.err; fail "$what: exit status $rc (expected 0, or 2 with distzo's message)" ;;
    esac
  done
  # The run's own check (the plan, the threads' buffers and stacks) refuses
  # over a range wider than a step (a BLAS buffer is 128 MiB); what its last
  # refusal asked for is enough.
  [ "$run_refusals" -gt 0 ] || fail "$ranks rank(s) x $threads thread(s): the run's own memory check never refused"
  try "$ranks" "$threads" "$asked"
  [ "$rc" = 0 ] || { cat try.err; fail "$ranks rank(s) x $threads thread(s): the limit its message asked for (ulimit -v $asked) is not enough: exit status $rc"; }
  pass "$ranks rank(s) x $threads thread(s): the loader refused below $(((FIRST_KIB + loader * STEP_KIB) / 1024)) MiB, distzo's message at $refusals limits from there ($run_refusals by the run's own check, whose ulimit -v $asked is enough), runs from $((kib / 1024)) MiB"
done

# `distzo forward` runs GEMMs too: under every limit it either writes the
# logits or refuses before the BLAS would spin, writing nothing.
forward_refusals=0
for ((kib = FIRST_KIB; ; kib += STEP_KIB)); do
  [ "$kib" -le "$LAST_KIB" ] || fail "forward: not done under ulimit -v $LAST_KIB"
  rm -f logits.h5
  set +e
  OPENBLAS_NUM_THREADS=2 timeout -s KILL "$SECONDS_PER_TRY" bash -c 'ulimit -v "$1" && exec "$2" forward model.h5 "$3" logits.h5' \
    limited "$kib" "$DISTZO" "$TEST_DATA/opt_tiny_preln.ref.h5" > try.out 2> try.err
  rc=$?
  set -e
  [ "$rc" = 0 ] && break
  [ "$rc" = 127 ] && [ "$forward_refusals" = 0 ] && grep -q "failed to map segment" try.err && continue
  [ "$rc" = 2 ] && grep -q "^distzo: error.*address-space limit of this process is ulimit -v $kib" try.err ||
    { cat try.err; fail "forward under ulimit -v $kib: exit status $rc, expected 0 or 2 with distzo's message"; }
  [ ! -e logits.h5 ] || fail "forward under ulimit -v $kib: refused, but wrote its output"
  grep -q "^distzo: error: forward: the address-space limit.*the BLAS work buffers" try.err &&
    forward_refusals=$((forward_refusals + 1))
done
[ "$forward_refusals" -gt 0 ] || fail "forward's own check of the BLAS buffers never refused"
pass "forward: refused with distzo's message below $((kib / 1024)) MiB ($forward_refusals by its own check of the BLAS buffers), writes the logits from there"
