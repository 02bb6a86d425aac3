# Several "nodes" on one machine, for MPI tests that need more than one node
# (source it after tests/cli/lib.sh, then call make_nodes):
#
#   make_nodes [N]          N nodes (default 2); skips the test (exit 77) when
#                           namespaces cannot be made, fails instead if CI is set
#   NODE_NAMES[k]           node k's host name, e.g. dzt1234-n0
#   on_node K CMD...        runs CMD inside node K's namespaces
#   on_node_bg K CMD...     the same in the background ($! is CMD's pid)
#   mpiexec_nodes ARGS...   $MPIEXEC inside node 0, starting the hydra proxy of
#                           every host in -hosts on that node (ssh launcher)
#
# A node is a network namespace (`ip netns`, named dzt$$-nK), a UTS namespace
# whose host name is the node's name, and the mount namespace `ip netns exec`
# makes (/etc/netns/NAME/hosts bind-mounted over /etc/hosts, so every node
# resolves every other by name) with a /dev/shm of its own (a tmpfs: MPICH's
# node-shared windows, θ's master among them, are files there, one set per
# node). A holder process (sleep) keeps the UTS and mount namespaces;
# node_launcher.sh enters the holder's namespaces with nsenter, which is all
# hydra's ssh launcher needs: it runs `LAUNCHER -x HOST PROXY-COMMAND...` once
# per host. Process ids, the IPC namespace and the file system (but /dev/shm)
# stay shared: the nodes see $WORK alike. What differs is the network, the
# host name and therefore MPI's idea of a node (hydra: one proxy per host;
# MPI_COMM_TYPE_SHARED groups a proxy's ranks).
#
# UCX (MPICH ch4:ucx) takes two processes for one machine when their boot id
# and IPC namespace agree, so between these nodes it moves messages through
# shared memory (sysv, cma, and posix segments reached through /proc/PID/fd,
# which a /dev/shm of its own does not hide) unless UCX_TLS leaves those out
# (self,tcp: the veth). An IPC namespace per node makes it use tcp always,
# but UCX 1.13.1's tcp under MPICH 4.0.2 now and then hangs in MPI_Finalize
# (tests/cli/two_nodes.sh, case 6), so the nodes share the IPC namespace.
#
# Network: node 0 holds a bridge with 10.251.0.1/24; node k >= 1 a veth
# (eth0, 10.251.0.(k+1)) whose peer is a port of that bridge. Nothing is
# connected to the root namespace, so no packet of the nodes leaves them
# (the addresses are used nowhere else). mpiexec runs inside node 0.
#
# Everything is removed on exit (holders, namespaces, /etc/netns/NAME, and
# the /run/netns mount when `ip netns` made it for us), also when the test
# fails; namespaces left by an earlier run that was killed (its pid is gone)
# are removed at the start.

NODE_NAMES=()
NODE_HOLDERS=()
NODE_PREFIX=dzt$$
NODES_FILE=
NODE_LAUNCHER=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/node_launcher.sh
_nodes_netns_premounted=
_nodes_etc_netns_existed=

nodes_skip() {
  [ -z "${CI:-}" ] || fail "$* (CI is set: this test must run there)"
  echo "skipped: $*"
  exit 77
}

# Removes this run's nodes: every process still in a node's network
# namespace (a rank, a proxy, the holder), then the namespaces and their files.
nodes_cleanup() {
  local pid name
  for name in "${NODE_NAMES[@]}"; do
    ip netns pids "$name" 2> /dev/null | xargs -r kill -KILL 2> /dev/null || true
  done
  for pid in "${NODE_HOLDERS[@]}"; do kill -KILL "$pid" 2> /dev/null || true; done
  for pid in "${NODE_HOLDERS[@]}"; do wait "$pid" 2> /dev/null || true; done
  for name in "${NODE_NAMES[@]}"; do
    ip netns delete "$name" 2> /dev/null || true
    rm -rf "/etc/netns/$name"
  done
  NODE_HOLDERS=() NODE_NAMES=()
  _nodes_tidy
}

# The directories and the mount `ip netns add` made, once no namespace is left.
_nodes_tidy() {
  if [ -z "$_nodes_etc_netns_existed" ] && [ -d /etc/netns ]; then rmdir /etc/netns 2> /dev/null || true; fi
  if [ -z "$_nodes_netns_premounted" ] && [ -z "$(ip netns list 2> /dev/null)" ]; then
    if mountpoint -q /run/netns 2> /dev/null; then umount /run/netns 2> /dev/null || true; fi
    rmdir /run/netns 2> /dev/null || true
  fi
}

# Namespaces of earlier runs whose test process no longer exists (a test
# killed with SIGKILL, e.g. by a ctest timeout, cannot clean up after itself).
_nodes_remove_stale() {
  local name pid
  for name in $(ip netns list 2> /dev/null | awk '{ print $1 }' | grep '^dzt[0-9]*-n[0-9]*$'); do
    pid=${name#dzt}; pid=${pid%-n*}
    [ -d "/proc/$pid" ] && continue
    ip netns pids "$name" 2> /dev/null | xargs -r kill -KILL 2> /dev/null || true
    ip netns delete "$name" 2> /dev/null || true
    rm -rf "/etc/netns/$name"
    echo "note: removed the namespace $name left by an earlier run (process $pid has ended)"
  done
}

# make_nodes [N]: N nodes, the trap that removes them, NODES_FILE (host and
# holder pid per line, read by node_launcher.sh).
make_nodes() {
  local n=${1:-2} k name hosts
  [ "$(id -u)" = 0 ] || nodes_skip "needs root to create network and UTS namespaces"
  local tool
  for tool in ip unshare nsenter mountpoint; do
    command -v "$tool" > /dev/null || nodes_skip "$tool not found"
  done
  ip netns list > /dev/null 2>&1 || nodes_skip "ip netns does not work here: $(ip netns list 2>&1 | head -1)"
  # /run/netns (a mount `ip netns add` makes) and /etc/netns are removed at
  # the end when no namespace is left, unless they were there before and
  # not only for other runs of this script (which may end before this one).
  if mountpoint -q /run/netns 2> /dev/null &&
    { [ -z "$(ip netns list)" ] || ip netns list | awk '{ print $1 }' | grep -qv '^dzt[0-9]*-n[0-9]*$'; }; then
    _nodes_netns_premounted=1
  fi
  if [ -d /etc/netns ] && { [ -z "$(ls -A /etc/netns)" ] || ls -A /etc/netns | grep -qv '^dzt[0-9]*-n[0-9]*$'; }; then
    _nodes_etc_netns_existed=1
  fi
  trap 'kill_leftovers; nodes_cleanup; rm -rf "$WORK"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
  _nodes_remove_stale

  for k in $(seq 0 $((n - 1))); do NODE_NAMES+=("$NODE_PREFIX-n$k"); done
  hosts=$(printf '127.0.0.1 localhost\n'; for k in $(seq 0 $((n - 1))); do
    printf '10.251.0.%d %s\n' $((k + 1)) "${NODE_NAMES[$k]}"
  done)
  for k in $(seq 0 $((n - 1))); do
    name=${NODE_NAMES[$k]}
    local err
    err=$(ip netns add "$name" 2>&1) || { NODE_NAMES=("${NODE_NAMES[@]:0:$k}"); nodes_skip "cannot create a network namespace: $err"; }
    mkdir -p "/etc/netns/$name"
    printf '%s\n' "$hosts" > "/etc/netns/$name/hosts"
    ip -n "$name" link set lo up
  done
  local n0=${NODE_NAMES[0]}
  ip -n "$n0" link add br0 type bridge || nodes_skip "cannot create a bridge in a namespace"
  ip -n "$n0" addr add 10.251.0.1/24 dev br0
  ip -n "$n0" link set br0 up
  for k in $(seq 1 $((n - 1))); do
    name=${NODE_NAMES[$k]}
    ip -n "$n0" link add "p$k" type veth peer name eth0 netns "$name" || nodes_skip "cannot create a veth pair"
    ip -n "$n0" link set "p$k" master br0
    ip -n "$n0" link set "p$k" up
    ip -n "$name" addr add "10.251.0.$((k + 1))/24" dev eth0
    ip -n "$name" link set eth0 up
  done

  # One holder per node: in the node's network and mount namespaces (ip
  # netns exec) and a UTS namespace of its own named after the node. Started
  # from / so that kill_leftovers (processes working in $WORK) leaves it alone.
  NODES_FILE=$WORK/nodes.txt
  : > "$NODES_FILE"
  for k in $(seq 0 $((n - 1))); do
    name=${NODE_NAMES[$k]}
    (cd / && exec ip netns exec "$name" unshare --uts sh -c \
      "hostname '$name' && mount -t tmpfs -o mode=1777,size=1g distzo-shm /dev/shm && exec sleep infinity") &
    NODE_HOLDERS+=($!)
  done
  for k in $(seq 0 $((n - 1))); do
    local pid=${NODE_HOLDERS[$k]} ok=
    for _ in $(seq 100); do
      if [ "$(cat "/proc/$pid/comm" 2> /dev/null)" = sleep ] &&
        [ "$(nsenter --target "$pid" --uts hostname 2> /dev/null)" = "${NODE_NAMES[$k]}" ]; then ok=1; break; fi
      [ -d "/proc/$pid" ] || break
      sleep 0.05
    done
    [ -n "$ok" ] || nodes_skip "the holder of node ${NODE_NAMES[$k]} did not come up (no UTS namespace, or no tmpfs for /dev/shm?)"
    printf '%s %s\n' "${NODE_NAMES[$k]}" "$pid" >> "$NODES_FILE"
  done
  # Every node resolves node 0's name and reaches its address (TCP to a
  # closed port: "refused" is an answer; no ping needed).
  local out
  for k in $(seq 1 $((n - 1))); do
    on_node "$k" getent hosts "${NODE_NAMES[0]}" > /dev/null || fail "node $k does not resolve ${NODE_NAMES[0]}"
    out=$(on_node "$k" timeout 10 bash -c "exec 3<> /dev/tcp/${NODE_NAMES[0]}/9" 2>&1) ||
      case $out in *"Connection refused"*) ;; *) fail "node $k cannot reach ${NODE_NAMES[0]}: $out" ;; esac
  done
}

# on_node K CMD...: CMD in node K's network, UTS and mount namespaces, in
# the current directory.
on_node() {
  local k=$1; shift
  nsenter --target "${NODE_HOLDERS[$k]}" --net --uts --mount --wd="$PWD" -- "$@"
}

# on_node_bg K CMD...: on_node in the background; $! is CMD's pid (nsenter
# execs it), so a daemon started this way can be stopped by that pid.
on_node_bg() {
  local k=$1; shift
  nsenter --target "${NODE_HOLDERS[$k]}" --net --uts --mount --wd="$PWD" -- "$@" &
}

# mpiexec_nodes ARGS...: mpiexec inside node 0; with -hosts naming nodes,
# their proxies start there through node_launcher.sh. Killed after
# NODES_TIMEOUT seconds (default 120): hydra waits forever for a proxy that
# never connects, and a test that hangs until ctest kills it cannot clean up.
mpiexec_nodes() {
  on_node 0 timeout --kill-after=5 "${NODES_TIMEOUT:-120}" \
    env DISTZO_NODES="$NODES_FILE" "$MPIEXEC" -launcher ssh -launcher-exec "$NODE_LAUNCHER" "$@"
}
