#!/usr/bin/env bash
# distzo_fuzz finding: sanitizer report: ERROR: AddressSanitizer
# Runs distzo as the harness did: in a copy of input/, one BLAS thread,
# under the same limits. Usage: repro.sh [DISTZO]; for a distzo built with
# AddressSanitizer, set ASAN_OPTIONS as scripts/test-sanitized.sh does.
set -u
distzo=${1:-'/work/main/build-asan/distzo'}
work=$(mktemp -d "${TMPDIR:-/tmp}/distzo-repro.XXXXXX")
cp -r "$(dirname "$0")/input/." "$work"
cd "$work"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
if [ -n "${ASAN_OPTIONS:-}" ]; then
  export ASAN_OPTIONS="$ASAN_OPTIONS:soft_rss_limit_mb=2048"
else
  ulimit -v 2097152
fi
timeout --signal=KILL 30 "$distzo" 'inspect' 'input.h5'
status=$?
echo "exit status $status (137: killed, e.g. by the timeout; files in $work)"
