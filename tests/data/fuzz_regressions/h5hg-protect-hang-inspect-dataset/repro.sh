#!/usr/bin/env bash
# distzo_fuzz finding: hang: still running after 20 s
# Runs distzo as the harness did: in a copy of input/, one BLAS thread,
# under the same limits. Usage: repro.sh [DISTZO]
set -u
distzo=${1:-'/work/wt-fuzz/build/distzo'}
work=$(mktemp -d "${TMPDIR:-/tmp}/distzo-repro.XXXXXX")
cp -r "$(dirname "$0")/input/." "$work"
cd "$work"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
[ -n "${ASAN_OPTIONS:-}" ] || ulimit -v 2097152
timeout --signal=KILL 20 "$distzo" 'inspect' 'train.h5'
status=$?
echo "exit status $status (137: killed, e.g. by the timeout; files in $work)"
