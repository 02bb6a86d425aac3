#!/usr/bin/env bash
# Inputs a careless user or a cluster hands distzo, each of which once hung
# it, aborted it or dropped the cause (issue 55, item 7): every one ends in
# bounded time with exit status 2 and a message that names the cause.
source "$(dirname "$0")/lib.sh" "$@"

# expect_refusal NAME PATTERN COMMAND...: COMMAND ends within 30 s with exit
# status 2, saying PATTERN on stderr.
expect_refusal() {
  local name=$1 pattern=$2
  shift 2
  set +e
  timeout -s KILL 30 "$@" > "$name.out" 2> "$name.err" < /dev/null
  local rc=$?
  set -e
  [ "$rc" = 2 ] || { cat "$name.err"; fail "$name: exit status $rc (137: no end within 30 s), expected 2"; }
  grep -q -- "$pattern" "$name.err" || { cat "$name.err"; fail "$name: does not say '$pattern'"; }
  pass "$name: $(grep -m1 -- "$pattern" "$name.err" | head -c 200)"
}

# A FIFO where a model, dataset or checkpoint belongs: HDF5 would wait on it
# forever (`run` refused it already, at the deck).
mkfifo pipe.h5
expect_refusal inspect_fifo "'pipe.h5' is a FIFO (named pipe), not a regular file" \
  "$DISTZO" inspect pipe.h5
expect_refusal digest_fifo "is a FIFO (named pipe), not a regular file" "$DISTZO" inspect pipe.h5 --digest
expect_refusal forward_fifo "is a FIFO (named pipe), not a regular file" \
  "$DISTZO" forward model.h5 pipe.h5 logits.h5
[ ! -e logits.h5 ] || fail "forward wrote its output from a FIFO"
deck fifo 2 fifo
sed -i 's|train: train.h5|train: pipe.h5|' fifo.yaml
expect_refusal run_fifo "expected a regular file, found a FIFO (named pipe)" "$DISTZO" run fifo.yaml

# Kokkos variables it cannot take: an input error naming them, not an
# exception escaping main (terminate, exit 134).
deck kokkos 2 kokkos
expect_refusal kokkos_threads "Kokkos could not start: .*KOKKOS_NUM_THREADS=auto" \
  env KOKKOS_NUM_THREADS=auto "$DISTZO" run kokkos.yaml
[ ! -e kokkos ] || fail "a run whose Kokkos did not start made its output directory"
expect_refusal kokkos_device "Kokkos could not start: .*KOKKOS_DEVICE_ID=zz" \
  env KOKKOS_DEVICE_ID=zz "$DISTZO" inspect model.h5

# Under an OpenMP Kokkos OMP_NUM_THREADS is the thread count (run.log:
# "Kokkos' OpenMP threads"): a value OpenMP cannot read is refused, where it
# used to be ignored by OpenMP and named by run.log as the count's source.
deck omp 2 omp
if "$DISTZO" run omp.yaml > omp.log 2>&1 && grep -q "Kokkos' OpenMP threads" omp/run.log; then
  rm -rf omp
  expect_refusal omp_threads "OMP_NUM_THREADS=abc: expected a positive thread count" \
    env OMP_NUM_THREADS=abc "$DISTZO" run omp.yaml
fi

# More GEMM threads than an address-space limit holds: the run's memory check
# names the threads (64 of them need 64 BLAS buffers of 128 MiB, far above
# the limit), where starting them once failed with "internal error:
# Resource temporarily unavailable" (exit 3). (OMP_NUM_THREADS: the count
# under an OpenMP Kokkos, whose threads are the GEMM's.)
if [[ "${ASAN_OPTIONS:-}" != *max_allocation_size_mb* ]]; then
  deck threads 2 threads
  expect_refusal threads64 "too small for this run: .* for its 64 GEMM thread(s)" \
    bash -c 'ulimit -v $((2048 * 1024)) && OPENBLAS_NUM_THREADS=64 OMP_NUM_THREADS=64 exec "$0" run threads.yaml' "$DISTZO"
fi

# An output.dir this user may not write to: the cause is in the message.
# Root writes anywhere, so this runs as an unprivileged user where the
# test may become one (setpriv, as root); elsewhere it is not applicable.
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null; then
  mkdir -m 555 readonly
  chmod 755 "$WORK"
  deck denied 2 readonly
  expect_refusal denied "cannot create the lock '.*' in output.dir: Permission denied" \
    setpriv --reuid=65534 --regid=65534 --clear-groups "$DISTZO" run denied.yaml
else
  echo "ok: output.dir without write permission: not applicable (needs root to become another user)"
fi

# `distzo run` misused: the usage, and no source location (an input error).
expect_refusal run_no_deck "run: missing DECK.yaml" "$DISTZO" run
grep -q "usage: distzo run DECK.yaml" run_no_deck.err || fail "run without a deck: no usage line"
! grep -q "\[src/" run_no_deck.err || fail "run without a deck: a source location: $(cat run_no_deck.err)"
expect_refusal run_two_decks "run: one deck expected" "$DISTZO" run a.yaml b.yaml
pass "distzo run misused: usage, no source location"
