#!/usr/bin/env bash
# An open-files limit (ulimit -n) under 64 is raised when the hard limit
# allows, else refused with what to do (before, MPI_Init failed inside UCX
# with a message naming no cause). Address-space limits: memory_limit_sweep.sh.
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
