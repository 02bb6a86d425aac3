#!/usr/bin/env bash
# Two nodes on one machine (tests/support/nodes.sh: a network, UTS and mount
# namespace per node, hydra's ssh launcher entering them): every other MPI
# test runs on one node, where MPI_COMM_TYPE_SHARED puts all ranks together.
# Here each node has its own host name, its own /dev/shm, its own hydra
# proxy, hence its own node communicator, its own node-shared θ master and
# its own slices, and only node 0 writes checkpoints. DESIGN.md invariants
# 3, 4, 6: the same deck gives the same digest on 2 nodes as on 1, the
# replicas on the two nodes stay identical, checkpoints move between 1 and
# 2 nodes, and a rank killed on node 1 ends the job and spoils no checkpoint.
#
# Between the nodes MPI's messages go through UCX's shared memory (UCX takes
# the nodes for one machine, tests/support/nodes.sh), through TCP in case 6.
# Digests are compared exactly, on this machine (DESIGN.md invariant 6: the
# host GEMM path is invariant by construction; other CPU models may give
# other bits).
# Needs root (namespaces); elsewhere it skips (exit 77); with CI set a skip
# is a failure.
source "$(dirname "$0")/lib.sh" "$@"
source "$(dirname "$0")/../support/nodes.sh"
make_nodes 2
n0=${NODE_NAMES[0]}
n1=${NODE_NAMES[1]}
STEPS=20
ckpt() { echo "$1/ckpt-$(printf %06d "${2:-$STEPS}").h5"; }
final() { digest "$(ckpt "$1" "${2:-$STEPS}")"; }
mesh_deck() {  # mesh_deck NAME STEPS P D [extra lines]
  local name=$1 steps=$2 p=$3 d=$4; shift 4
  deck "$name" "$steps" "$name" 'parallel:' "  perturbation: $p" "  data: $d" '  check_interval: 1' "$@"
}
# one_node NAME RANKS: NAME.yaml on RANKS ranks of this (root namespace's) node.
one_node() {
  "$MPIEXEC" -n "$2" "$DISTZO" run "$1.yaml" > "$1.log" 2>&1 || { cat "$1.log"; fail "$1 (1 node, $2 ranks) failed"; }
}
# two_nodes NAME PER_NODE [mpiexec options]: NAME.yaml on PER_NODE ranks of each node.
two_nodes() {
  local name=$1 k=$2; shift 2
  mpiexec_nodes "$@" -hosts "$n0:$k,$n1:$k" -n $((2 * k)) "$DISTZO" run "$name.yaml" > "$name.log" 2>&1 ||
    { cat "$name.log"; fail "$name (2 nodes x $k ranks) failed"; }
}
has() { grep -qF -- "$2" "$1/run.log" || fail "$1/run.log lacks '$2': $(grep -F -- "${3:-placement}" "$1/run.log")"; }

# The launcher puts rank r on the node hydra says, with that node's host name.
NODES_TIMEOUT=30 mpiexec_nodes -hosts "$n0:1,$n1:1" -n 2 sh -c 'echo "$PMI_RANK $(hostname)"' | sort > hosts.txt
[ "$(cat hosts.txt)" = "$(printf '0 %s\n1 %s' "$n0" "$n1")" ] || fail "ranks and hosts: $(cat hosts.txt)"
pass "2 nodes ($n0, $n1): rank 0 on $n0, rank 1 on $n1"

# 1. P=2, one rank per node: each node a node communicator of 1 (no shared
#    master: nothing to share), the two evaluations on two hosts, g combined
#    between them; bit for bit the 1-rank run.
MICRO_BATCH=16 mesh_deck single $STEPS 1 1
"$DISTZO" run single.yaml > single.log 2>&1 || { cat single.log; fail "single failed"; }
MICRO_BATCH=16 mesh_deck n2_p2 $STEPS 2 1
two_nodes n2_p2 1
has n2_p2 "2 ranks (P=2 x D=1)" "distzo run"
has n2_p2 "host memory of node $n0 (1 rank): " "host memory"
has n2_p2 "host memory of node $n1 (1 rank): " "host memory"
grep -q "shared by the node's" n2_p2/run.log && fail "one rank per node shared a master: $(grep placement n2_p2/run.log)"
has n2_p2 "checkpoint $(ckpt n2_p2)" checkpoint
grep -q "written by the node's" n2_p2/run.log && fail "one rank per node wrote in parallel: $(grep checkpoint n2_p2/run.log)"
[ "$(final n2_p2)" = "$(final single)" ] || fail "P=2 on 2 nodes ($(final n2_p2)) differs from 1 rank ($(final single))"
pass "P=2, 1 rank per node: node communicators of 1, final digest == 1 rank's ($(final single))"

# 2. P=2 x D=2, 2 ranks per node: node k holds replica k in its own
#    node-shared master, sliced between its 2 ranks; the replicas, on two
#    nodes, are compared after every step (check_interval 1). The same deck
#    on 4 ranks of one node (one master for all 4) and D=2 on 2 ranks (as
#    mesh.sh: P=2 is exact) give the same bits; at equal global batch a
#    single rank is held to mesh.sh's tolerances (D=2 sums the batch in two
#    parts, which may round differently; the pass line says if the bits agree).
MICRO_BATCH=8 mesh_deck d2 $STEPS 1 2
one_node d2 2
MICRO_BATCH=8 mesh_deck n1_p2d2 $STEPS 2 2
one_node n1_p2d2 4
MICRO_BATCH=8 mesh_deck n2_p2d2 $STEPS 2 2
two_nodes n2_p2d2 2
has n1_p2d2 "shared by the node's 4 ranks (one copy per node)"
has n2_p2d2 "shared by the node's 2 ranks (one copy per node), each updating and perturbing 1/2 of every group, slices exchanged by shared_memory"
has n2_p2d2 "checkpoint $(ckpt n2_p2d2) (written by the node's 2 ranks together, parallel HDF5)" checkpoint
[ "$(final n2_p2d2)" = "$(final n1_p2d2)" ] ||
  fail "P2xD2 on 2 nodes ($(final n2_p2d2)) differs from P2xD2 on 4 ranks of 1 node ($(final n1_p2d2))"
[ "$(final n2_p2d2)" = "$(final d2)" ] || fail "P2xD2 on 2 nodes ($(final n2_p2d2)) differs from D=2 on 1 node ($(final d2))"
same_datasets "$(ckpt n1_p2d2)" "$(ckpt n2_p2d2)" ||
  fail "the checkpoint node 0's 2 ranks wrote differs from the one 4 ranks of one node wrote"
pass "P2xD2, 2 ranks per node (a shared master per node): final digest == P2xD2 on 1 node == D=2 on 1 node ($(final d2)); same checkpoint datasets"
like_one_rank n2_p2d2 single "P2xD2 on 2 nodes"
bits=$([ "$(final n2_p2d2)" = "$(final single)" ] && echo "equal here too" || echo "not equal, as may be")
pass "P2xD2 on 2 nodes vs 1 rank at the same global batch (16): losses within 1e-6 at step 1 and 1e-5 after, g within 1e-3 (final digests: $bits)"

# 3. Host memory per node: one line per node (its ranks' proportional set
#    sizes summed, each node's node-shared master counted once), then the total.
for node in "$n0" "$n1"; do
  has n2_p2d2 "host memory of node $node (2 ranks): " "host memory"
done
has n2_p2d2 "θ's master is one node-shared copy)" "host memory"
has n2_p2d2 "host memory of the 2 nodes (4 ranks): " "host memory"
[ "$(grep -c "^${STAMP}host memory of node" n2_p2d2/run.log)" = 2 ] || fail "expected two node memory lines: $(grep 'host memory' n2_p2d2/run.log)"
node_bytes() { sed -n "s/^${STAMP}host memory of node $1 (2 ranks): .* (\([0-9]*\) B).*/\1/p" n2_p2d2/run.log; }
total_bytes=$(sed -n "s/^${STAMP}host memory of the 2 nodes (4 ranks): .* (\([0-9]*\) B).*/\1/p" n2_p2d2/run.log)
[ "$(($(node_bytes "$n0") + $(node_bytes "$n1")))" = "$total_bytes" ] ||
  fail "node memory lines do not add up to the total: $(grep 'host memory' n2_p2d2/run.log)"
pass "run.log: host memory of each node's 2 ranks ($n0, $n1) and their total"

# 4. Checkpoints cross between 2 nodes and 1: 10 steps on 2 nodes + 10 on 1
#    node, and 10 on 1 node + 10 on 2 nodes, both == 20 on 1 node (D=2).
MICRO_BATCH=8 mesh_deck half_n2 10 2 2
two_nodes half_n2 2
MICRO_BATCH=8 deck rest_n1 $STEPS half_n2 'parallel:' '  data: 2' 'checkpoint:' '  resume: latest'
one_node rest_n1 2
grep -q "resuming from half_n2/ckpt-000010.h5" rest_n1.log || fail "rest_n1 did not resume from step 10: $(head -1 rest_n1.log)"
[ "$(final half_n2)" = "$(final d2)" ] || fail "written on 2 nodes, resumed on 1: $(final half_n2), straight $(final d2)"
pass "a P2xD2 checkpoint from 2 nodes resumed on 1 node (D=2, 2 ranks) == 20 steps straight"
MICRO_BATCH=8 mesh_deck half_n1 10 1 2
one_node half_n1 2
MICRO_BATCH=8 mesh_deck rest_n2 $STEPS 2 2 'checkpoint:' '  resume: latest'
sed -i 's/dir: rest_n2/dir: half_n1/' rest_n2.yaml
two_nodes rest_n2 2
grep -q "resuming from half_n1/ckpt-000010.h5" rest_n2.log || fail "rest_n2 did not resume from step 10: $(head -1 rest_n2.log)"
[ "$(final half_n1)" = "$(final d2)" ] || fail "written on 1 node, resumed on 2: $(final half_n1), straight $(final d2)"
pass "a D=2 checkpoint from 1 node resumed on 2 nodes (P2xD2) == 20 steps straight"

# 5. A rank of node 1 SIGKILLed mid-run (checkpoints every 2 steps): the job
#    ends within seconds with an error, every checkpoint left reads back
#    whole (its tensors' digest is the one it records), and the newest
#    resumes, on node 0 alone, to the digest of a run never killed.
MICRO_BATCH=8 mesh_deck killed 100000000 2 2 'checkpoint:' '  interval: 2' '  keep: 3'
NODES_TIMEOUT=60 mpiexec_nodes -hosts "$n0:2,$n1:2" -n 4 "$DISTZO" run killed.yaml > killed.log 2>&1 &
launcher=$!
for _ in $(seq 300); do [ -s killed/metrics.csv ] && [ "$(wc -l < killed/metrics.csv)" -gt 7 ] && break; sleep 0.05; done
[ "$(wc -l < killed/metrics.csv)" -gt 7 ] || { cat killed.log; fail "the run to kill made no progress"; }
node1_uts=$(readlink "/proc/${NODE_HOLDERS[1]}/ns/uts")
target= target_rank=
for p in $(rank_pids killed); do
  [ "$(readlink "/proc/$p/ns/uts")" = "$node1_uts" ] || continue
  target=$p
  target_rank=$(tr '\0' '\n' < "/proc/$p/environ" | sed -n 's/^PMI_RANK=//p')
  break
done
[ -n "$target" ] || fail "no rank of killed.yaml on $n1: $(rank_pids killed | tr '\n' ' ')"
kill -KILL "$target"
start=$SECONDS
set +e; wait "$launcher"; rc=$?; set -e
took=$((SECONDS - start))
[ "$rc" != 0 ] || fail "the job with rank $target_rank killed exited 0"
[ "$rc" != 124 ] && [ "$rc" != 137 ] || { cat killed.log; fail "the job with rank $target_rank killed did not end (mpiexec killed after ${NODES_TIMEOUT:-60} s)"; }
[ "$took" -le 15 ] || fail "the job took $took s to end after rank $target_rank was killed"
grep -q "BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES" killed.log && grep -q "RUNNING AT $n1" killed.log ||
  { cat killed.log; fail "mpiexec does not say that a process on $n1 terminated badly"; }
[ -z "$(rank_pids killed)" ] || fail "ranks of the killed job still run: $(rank_pids killed | tr '\n' ' ')"
ls killed/ckpt-*.h5 > /dev/null 2>&1 || fail "no checkpoint before the kill: $(ls killed)"
for f in killed/ckpt-*.h5; do
  recorded=$(h5dump -a /parameter_digest "$f" | sed -n 's/.*(0): "\([0-9a-f]*\)".*/\1/p')
  [ -n "$recorded" ] && [ "$(digest "$f")" = "$recorded" ] || fail "$f does not read back whole (recorded '$recorded')"
done
n=$(ls killed | sed -n 's/^ckpt-0*\([0-9][0-9]*\)\.h5$/\1/p' | sort -n | tail -1)
temporaries=$(ls killed | grep -c '\.tmp\.' || true)
pass "rank $target_rank (on $n1) SIGKILLed: the job ended in $took s (exit $rc, hydra: bad termination of a process at $n1); $(ls killed/ckpt-*.h5 | wc -l) checkpoints read back whole, newest step $n; $temporaries temporary file(s)"
# The run's LOCK names rank 0's host ($n0): a resume takes a dead run's lock
# over on that host only, so it runs on node 0.
target_step=$((n + 4))
MICRO_BATCH=8 deck killed_rest $target_step killed 'parallel:' '  data: 2' 'checkpoint:' '  resume: latest'
on_node 0 "$MPIEXEC" -n 2 "$DISTZO" run killed_rest.yaml > killed_rest.log 2>&1 ||
  { cat killed_rest.log; fail "resuming the killed run failed"; }
grep -q "resuming from killed/ckpt-$(printf %06d "$n").h5" killed_rest.log || fail "did not resume from step $n: $(head -1 killed_rest.log)"
! ls killed | grep -q '\.tmp\.' || fail "a temporary checkpoint survived the resume: $(ls killed)"
MICRO_BATCH=8 mesh_deck straight $target_step 1 2
one_node straight 2
[ "$(final killed "$target_step")" = "$(final straight "$target_step")" ] ||
  fail "killed at step >= $n and resumed differs from $target_step steps straight"
pass "the killed run resumed from step $n on node 0 == $target_step steps straight ($(final straight "$target_step"))"

# 6. The P2xD2 run of case 2 with MPI's traffic between the nodes over TCP,
#    through the veth pair. UCX takes two processes for one machine when the
#    boot id and the IPC namespace agree (ucs_get_system_id,
#    uct_sm_iface_is_reachable), so between these nodes it uses shared memory
#    (sysv, cma) in cases 1-5; UCX_TLS=self,tcp makes it use the network.
#    Known here: UCX 1.13.1's tcp under MPICH 4.0.2 now and then hangs in
#    MPI_Finalize, one rank waiting in ucp_disconnect_nb for a peer that has
#    stopped progressing (openucx/ucx#8738; seen on one host without
#    namespaces too, with UCX_TLS=self,tcp MPIR_CVAR_NOLOCAL=1). A run that
#    ended (its "done:" line, its final checkpoint) but whose mpiexec had to
#    be stopped in MPI_Finalize passes with a note; any other failure fails.
mpi_info=$("$MPIEXEC" -info 2> /dev/null || true)  # (not piped into grep -q: SIGPIPE under pipefail)
if [[ $mpi_info == *ch4:ucx* ]]; then
  MICRO_BATCH=8 mesh_deck n2_tcp $STEPS 2 2
  set +e
  NODES_TIMEOUT=10 mpiexec_nodes -genv UCX_TLS self,tcp -genv UCX_LOG_LEVEL info -hosts "$n0:2,$n1:2" -n 4 \
    "$DISTZO" run n2_tcp.yaml > n2_tcp.log 2>&1
  rc=$?
  set -e
  grep -q 'ep_cfg.*tcp/\(eth0\|br0\)' n2_tcp.log ||
    fail "UCX did not use tcp over the nodes' link: $(grep ep_cfg n2_tcp.log | head -4)"
  grep -q "^${STAMP}done: " n2_tcp/run.log || { cat n2_tcp.log; fail "the P2xD2 run over TCP did not finish (exit $rc)"; }
  [ "$(final n2_tcp)" = "$(final d2)" ] || fail "P2xD2 over TCP ($(final n2_tcp)) differs from D=2 on 1 node ($(final d2))"
  case $rc in
    0) note= ;;
    124 | 137) note="; note: mpiexec was stopped after the run had ended, MPI_Finalize hung over UCX tcp (openucx/ucx#8738)" ;;
    *) cat n2_tcp.log; fail "the P2xD2 run over TCP exited $rc" ;;
  esac
  pass "P2xD2 with UCX over TCP between the nodes (tcp/eth0, tcp/br0) == D=2 on 1 node$note"
else
  echo "note: $MPIEXEC is not MPICH on UCX (ch4:ucx): case 6, UCX over TCP between the nodes, not run"
fi
