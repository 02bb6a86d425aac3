#!/usr/bin/env bash
# A checkpoint write that fails — the disk fills up, or the file outgrows the
# process's size limit — stops the run with exit status 2 and a message that
# names the file and the cause, leaves the previous checkpoints as they were
# and no temporary file behind, and does not crash on the way out (HDF5 used
# to segfault at MPI_Finalize on the file it could not close).
source "$(dirname "$0")/lib.sh" "$@"
no_temporaries() { ! ls "$1" | grep -q '\.tmp\.' || fail "a temporary checkpoint was left in $1: $(ls "$1")"; }

# 1. A full disk: a 360 KiB tmpfs holds two checkpoints of the tiny model
#    (112 KB each), not a third. Needs root and a mount namespace.
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  mkdir -p full
  deck full 30 "$PWD/full/out" 'checkpoint:' '  interval: 10'
  set +e
  unshare -m bash -c "mount -t tmpfs -o size=360k tmpfs '$PWD/full' && '$DISTZO' run full.yaml > full.log 2>&1 &&
    echo 0 > rc || echo \$? > rc; cp -r '$PWD/full/out' '$PWD/full_out'"
  set -e
  [ "$(cat rc)" = 2 ] || { cat full.log; fail "a full disk ended with status $(cat rc), expected 2"; }
  grep -q "cannot write checkpoint '$PWD/full/out/ckpt-000030.h5': disk full" full.log ||
    fail "disk-full message: $(tail -2 full.log)"
  for s in 10 20; do digest "full_out/ckpt-0000$s.h5" > /dev/null || fail "checkpoint $s was damaged"; done
  no_temporaries full_out
  pass "a full disk: exit 2, 'disk full' named with the checkpoint, checkpoints 10 and 20 intact"
else
  echo "skip: the full-disk case needs root and unshare -m (a private tmpfs)"
fi

# 2. A write that fails half-way: a 10 MB checkpoint under a 8 MB file size
#    limit (SIGXFSZ ignored, so write() fails with EFBIG). MPICH's UCX shared
#    memory files would hit the limit too: TCP only.
"$DISTZO" make-model wide.h5 --layers 1 --hidden 128 --heads 2 --ffn 256 --vocab 18000 \
  --positions 32 --seed 3 > /dev/null
deck limit 20 limit 'checkpoint:' '  interval: 10'
sed -i 's/path: model.h5/path: wide.h5/' limit.yaml
set +e
(ulimit -f 8000; trap '' XFSZ; UCX_TLS=self,tcp exec "$DISTZO" run limit.yaml) > limit.log 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || { tail -5 limit.log; fail "a failed write ended with status $rc, expected 2 (139: the crash at exit)"; }
grep -q "checkpoint limit/ckpt-000010.h5 was not written (.*file too large (the process's file size limit, ulimit -f)); earlier checkpoints, if any, are untouched" limit.log ||
  fail "failed-write message: $(tail -2 limit.log)"
no_temporaries limit
pass "a write that fails half-way: exit 2, the cause named, no temporary left, no crash at exit"
