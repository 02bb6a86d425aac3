#!/usr/bin/env bash
# hydra's ssh launcher for the nodes of tests/support/nodes.sh: mpiexec
# -launcher ssh -launcher-exec node_launcher.sh runs, once per host,
#   node_launcher.sh -x HOST "/usr/bin/hydra_pmi_proxy" --control-port ... --proxy-id K
# (ssh options first; the command as words that ssh would join with spaces
# and give to the remote shell, hence the quoted proxy path). Like ssh, this
# joins them and runs them with sh, inside the namespaces of HOST's holder
# (DISTZO_NODES: lines "HOST HOLDER_PID").
set -eu
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done  # -x, -X: X forwarding
[ $# -ge 2 ] || { echo "node_launcher: usage: node_launcher.sh [-x] HOST COMMAND..." >&2; exit 255; }
host=$1
shift
pid=$(awk -v h="$host" '$1 == h { print $2 }' "${DISTZO_NODES:?DISTZO_NODES names no nodes file}")
[ -n "$pid" ] || { echo "node_launcher: no node named '$host' in $DISTZO_NODES" >&2; exit 255; }
exec nsenter --target "$pid" --net --uts --mount --wd="$PWD" -- /bin/sh -c "$*"
