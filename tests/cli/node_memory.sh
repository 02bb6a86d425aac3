#!/usr/bin/env bash
# Placement II's host memory (the node holds one θ, not P x D): P=2 x D=2 on
# 4 ranks of one node, with the shared master and replicated, on a model whose
# θ (a wide embedding, 9.3 MiB) dwarfs the rest. The run prints the node's
# proportional set sizes summed (shared pages counted once); the replicated
# run holds three more copies of θ, so it must need at least 2.7 θ more.
source "$(dirname "$0")/lib.sh" "$@"
"$DISTZO" make-model wide.h5 --layers 1 --hidden 128 --heads 2 --ffn 256 --vocab 18000 \
  --positions 32 --seed 3 > /dev/null
theta=$("$DISTZO" inspect wide.h5 | sed -n 's/^parameters *\([0-9]*\) in .*/\1/p')
[ -n "$theta" ] || fail "no parameter count from inspect: $("$DISTZO" inspect wide.h5 | head -3)"
theta_bytes=$((theta * 4))
node_memory() {  # node_memory NAME SHARE: bytes of the node's PSS sum the run printed
  deck "$1" 2 "$1" 'parallel:' '  perturbation: 2' '  data: 2' '  check_interval: 0' \
    'placement:' "  share_host_master: $2"
  sed -i 's/path: model.h5/path: wide.h5/' "$1.yaml"
  "$MPIEXEC" -n 4 "$DISTZO" run "$1.yaml" > "$1.log" 2>&1 || { cat "$1.log"; fail "$1 failed"; }
  sed -n "s/^${STAMP}host memory of node .* (4 ranks): .* (\([0-9]*\) B).*/\1/p" "$1/run.log"
}
shared=$(node_memory shared true)
replicated=$(node_memory replicated false)
[ -n "$shared" ] && [ -n "$replicated" ] || fail "no node memory line: $(grep 'host memory' shared/run.log replicated/run.log)"
awk -v s="$shared" -v r="$replicated" -v t="$theta_bytes" 'BEGIN { exit !(r - s >= 2.7 * t) }' ||
  fail "P2xD2 replicated needs $replicated B, shared $shared B: not 3 copies of θ ($theta_bytes B) apart"
pass "P2xD2 on one node: $shared B shared vs $replicated B replicated (θ = $theta_bytes B): one copy per node"
