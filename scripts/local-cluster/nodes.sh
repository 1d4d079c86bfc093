# shellcheck shell=bash
# Sourced by scripts/local-cluster.sh: the cluster's kind (one node on the
# host, or N nodes in namespaces), the file that remembers it, and the
# multi-node machinery: the bridge, each node's namespaces (node-init.sh and
# its holder process), veth and address, and taking all that down again.
#
# A node K of a multi-node cluster is: a holder process (node-init.sh, then
# "ix-node-holder DIR/ ixnK") in its own network, UTS and mount namespaces;
# a veth pair, host end IX_VETH_PREFIX+K on the bridge, node end eth0 with
# NET.(10+K); slurmd entered into the holder's namespaces with nsenter.
# Everything of a node dies with the last process in its namespaces.

KIND_FILE=$RUN/nodes    # "nodes=N" and "net=A.B.C.0/24" of the last start
MAX_NODES=32
DEFAULT_NET=10.77.0.0/24

# set_kind N NET: the settings every command derives from the kind.
# N=1: the single-node cluster (NET unused). Sets NODES, MULTI, NODE_NAMES,
# CTLD_ADDR and, for N>1, NET, NET_PREFIX, BRIDGE, VETH_PREFIX.
set_kind() {
  NODES=$1
  NET=$2
  if [[ $NODES -eq 1 ]]; then
    MULTI=0 BRIDGE='' VETH_PREFIX='' NET_PREFIX=''
    NODE_NAMES=("$NODE")
    CTLD_ADDR=127.0.0.1
    return 0
  fi
  MULTI=1
  NET_PREFIX=${NET%.0/24}
  local a b c hex
  IFS=. read -r a b c <<<"$NET_PREFIX"
  hex=$(printf '%02x%02x%02x' "$a" "$b" "$c")
  # Interface names (at most 15 characters) are unique per /24, and the /24
  # is unique per running cluster (check_net refuses one in use).
  BRIDGE=ixbr$hex
  VETH_PREFIX=ixv${hex}n
  CTLD_ADDR=$NET_PREFIX.1
  NODE_NAMES=()
  local k
  for ((k = 1; k <= NODES; k++)); do NODE_NAMES+=("ixn$k"); done
}

# check_nodes_arg N: 1..MAX_NODES, else a usage error.
check_nodes_arg() {
  [[ $1 =~ ^[1-9][0-9]*$ && $1 -le $MAX_NODES ]] \
    || usage_error "--nodes must be an integer from 1 to $MAX_NODES (got '$1')"
}

# check_net_arg NET: a /24 of a private range, written A.B.C.0/24.
check_net_arg() {
  local net=$1 a b c
  [[ $net =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.0/24$ ]] \
    || die "IX_NODE_NET must be a /24 written A.B.C.0/24 (got '$net')"
  a=$((10#${BASH_REMATCH[1]})); b=$((10#${BASH_REMATCH[2]})); c=$((10#${BASH_REMATCH[3]}))
  [[ $a -le 255 && $b -le 255 && $c -le 255 ]] || die "IX_NODE_NET '$net' is not an IPv4 network"
  if ! [[ $a -eq 10 || ($a -eq 172 && $b -ge 16 && $b -le 31) || ($a -eq 192 && $b -eq 168) ]]; then
    die "IX_NODE_NET '$net' is not in a private range (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16)"
  fi
}

# read_kind: the kind of the last start from KIND_FILE (1 node when there is
# none: a cluster never started, or started before multi-node existed).
# Prints "N NET".
read_kind() {
  local n=1 net=$DEFAULT_NET line
  if [[ -r $KIND_FILE ]]; then
    while IFS= read -r line; do
      case $line in
        nodes=*) n=${line#nodes=} ;;
        net=*) net=${line#net=} ;;
      esac
    done <"$KIND_FILE"
  fi
  [[ $n =~ ^[1-9][0-9]*$ && $n -le $MAX_NODES ]] || die "$KIND_FILE: bad nodes= '$n'"
  if [[ $n -gt 1 ]]; then check_net_arg "$net"; fi
  echo "$n $net"
}

write_kind() {
  printf 'nodes=%s\nnet=%s\n' "$NODES" "$NET" >"$KIND_FILE.tmp"
  mv -f "$KIND_FILE.tmp" "$KIND_FILE"
}

# node_addr NAME: the node's NodeAddr.
node_addr() {
  if [[ $MULTI -eq 0 ]]; then echo 127.0.0.1; else echo "$NET_PREFIX.$((10 + ${1#ixn}))"; fi
}

# Per-node files: the single node keeps the names it always had.
slurmd_pid_file() { if [[ $MULTI -eq 0 ]]; then echo "$RUN/slurmd.pid"; else echo "$RUN/slurmd-$1.pid"; fi; }
slurmd_log() { if [[ $MULTI -eq 0 ]]; then echo "$LOG/slurmd.log"; else echo "$LOG/slurmd-$1.log"; fi; }
slurmd_out() { if [[ $MULTI -eq 0 ]]; then echo "$LOG/slurmd.out"; else echo "$LOG/slurmd-$1.out"; fi; }
holder_pid_file() { echo "$RUN/node-$1.pid"; }

require_ns_tools() {
  local t missing=()
  for t in ip nsenter unshare setsid; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
  done
  [[ ${#missing[@]} -eq 0 ]] || die "--nodes $NODES needs ${missing[*]} (Debian: iproute2, util-linux)"
}

# check_net: the /24 and the interface names must be free: no address or
# route of the host in it, no link of that name (another cluster, or a
# leftover that stop would remove).
check_net() {
  local re=${NET_PREFIX//./\\.} hit
  hit=$(ip -4 -o addr show 2>/dev/null | awk '{print $4 " on " $2}' | grep -E "^$re\.[0-9]+/" | head -n 1 || true)
  [[ -z $hit ]] || die "address range $NET (IX_NODE_NET) is in use on this host: $hit; choose another IX_NODE_NET"
  hit=$(ip -4 route show 2>/dev/null | grep -E "^$re\.[0-9]+(/| )" | head -n 1 || true)
  [[ -z $hit ]] || die "address range $NET (IX_NODE_NET) is routed on this host: '$hit'; choose another IX_NODE_NET"
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    die "network interface $BRIDGE already exists; choose another IX_NODE_NET"
  fi
}

# holder_pid NAME: the node's holder when it runs (from its pid file,
# checked against its command line).
holder_pid() {
  local pid
  pid=$(tr -dc 0-9 2>/dev/null <"$(holder_pid_file "$1")") || pid=
  if [[ -n $pid ]] && alive "$pid" && cmdline_has "$pid" "ix-node-holder $DIR/ $1"; then echo "$pid"; fi
}

# holder_pids: every holder of this cluster, by command line.
holder_pids() {
  local pid
  for pid in $(pgrep -f -- "^ix-node-holder $(dir_regex)/ " 2>/dev/null); do
    [[ $(exe_base "$pid") == sleep ]] && echo "$pid"
  done
}

# start_holder NAME: starts the node's namespaces and holder (node-init.sh)
# in the background; HOLDER_START[NAME] is its pid until it is ready.
declare -A HOLDER_START=()
start_holder() {
  local name=$1 out=$LOG/node-$1.out
  rm -f "$(holder_pid_file "$name")"
  # setsid and unshare exec (no fork), so $! becomes node-init.sh and then
  # the holder itself.
  env "$MARKER" setsid unshare --net --uts --mount --propagation private -- \
    "$SCRIPT_DIR/local-cluster/node-init.sh" "$name" "$DIR" </dev/null >"$out" 2>&1 &
  HOLDER_START[$name]=$!
}

# wait_holder NAME: until the holder wrote its pid file (0) or its start
# ended or the start-up time is up (1; the reason in the node's .out).
wait_holder() {
  wait_for "$(remaining)" holder_up_or_gone "$1" "${HOLDER_START[$1]}"
  [[ -n $(holder_pid "$1") ]]
}

# holder_up_or_gone NAME PID: the holder is ready, or PID (its start) ended.
holder_up_or_gone() { [[ -n $(holder_pid "$1") ]] || ! alive "$2"; }

# dir_regex: DIR for pgrep -f (DIR has only [A-Za-z0-9._/+-]).
dir_regex() {
  local re=${DIR//./\\.}
  echo "${re//+/\\+}"
}

# wire_node NAME: its veth on the bridge, its address, a default route to
# the host (so a node reaches the host's other addresses, as a login node).
wire_node() {
  local name=$1 pid veth addr
  pid=$(holder_pid "$name")
  [[ -n $pid ]] || return 1
  veth=$VETH_PREFIX${name#ixn}
  addr=$(node_addr "$name")
  ip link add "$veth" type veth peer name eth0 netns "$pid" &&
    ip link set "$veth" master "$BRIDGE" up &&
    nsenter -t "$pid" --net -- ip addr add "$addr/24" dev eth0 &&
    nsenter -t "$pid" --net -- ip link set eth0 up &&
    nsenter -t "$pid" --net -- ip route add default via "$CTLD_ADDR"
}

# write_node_resolv_conf: ETC/node-resolv.conf, the resolver each node gets
# (node-init.sh mounts it on its /etc/resolv.conf). A node's network reaches
# the bridge and the host only, never the host's name servers, so a lookup
# that goes to them waits out their timeouts (2 tries of 5 s each).
# Slurm 24.11's slurmd names every connection it accepts by the peer's
# address (a PTR lookup), one at a time: with the host's resolv.conf every
# RPC reached a node's slurmd 10-20 s late, slurmctld marked the nodes not
# responding and srun aborted steps "before step completely launched". No
# name server line: glibc then asks 127.0.0.1, which in the node's network
# refuses at once, so a name that /etc/hosts lacks fails without a wait.
write_node_resolv_conf() {
  cat >"$ETC/node-resolv.conf" <<'EOC'
# Generated by scripts/local-cluster.sh: a node's resolver. The nodes reach
# no name server; with none named here a lookup that /etc/hosts does not
# answer fails at once instead of after the host's servers' timeouts.
options attempts:1 timeout:1
EOC
  chmod 0644 "$ETC/node-resolv.conf"
}

# start_network: the bridge with the host's address, then every node.
start_network() {
  write_node_resolv_conf
  ip link add "$BRIDGE" type bridge || return 1
  ip addr add "$CTLD_ADDR/24" dev "$BRIDGE" || return 1
  ip link set "$BRIDGE" up || return 1
  local name
  # The nodes come up side by side; each is wired once its holder is ready.
  for name in "${NODE_NAMES[@]}"; do start_holder "$name"; done
  for name in "${NODE_NAMES[@]}"; do
    wait_holder "$name" || start_failed "node $name's namespaces did not come up" "$LOG/node-$name.out"
    wire_node "$name" || start_failed "could not connect node $name to bridge $BRIDGE" "$LOG/node-$name.out"
  done
}

# node_exec NAME CMD...: CMD in the node's namespaces (network, hostname,
# mounts), as slurmd runs there. Entering a mount namespace resets the root
# and working directory to the namespace's root, which in a chroot
# (scripts/debian-chroot.sh) is the host's: --root keeps the holder's root
# (the chroot), --wd=/ its top, as without a chroot.
node_exec() {
  local pid
  pid=$(holder_pid "$1"); shift
  [[ -n $pid ]] || return 1
  nsenter -t "$pid" --net --uts --mount --root --wd=/ -- "$@"
}

# ns_members HOLDER...: every process in the network or mount namespace of
# one of the holders (slurmd, step daemons, tasks, whatever a task left
# behind, a shell entered with 'exec'), holders included.
ns_members() {
  local h ns want=()
  for h in "$@"; do
    for ns in net mnt; do
      ns=$(readlink "/proc/$h/ns/$ns" 2>/dev/null) && want+=("$ns")
    done
  done
  [[ ${#want[@]} -gt 0 ]] || return 0
  # One find over /proc (a readlink per process would take seconds).
  # Lines "/proc/PID/ns TYPE:[INODE]"; the holders' namespaces are never the
  # host's (unshare made them).
  find /proc/[0-9]*/ns/net /proc/[0-9]*/ns/mnt -maxdepth 0 -printf '%h %l\n' 2>/dev/null \
    | awk -v want="${want[*]}" '
        BEGIN { n = split(want, w, " "); for (i = 1; i <= n; i++) ok[w[i]] = 1 }
        ($2 in ok) { split($1, p, "/"); print p[3] }' | sort -un
}

# stop_nodes: every process in the nodes' namespaces (TERM, 3 s, KILL), so
# that the namespaces, their mounts and veths go with them; then the bridge
# and any veth of this network left behind.
stop_nodes() {
  local holders pids p
  # The holders, and (a start that failed) node-init.sh processes this
  # script started that have not become holders yet.
  mapfile -t holders < <({
    holder_pids
    for p in "${HOLDER_START[@]}"; do alive "$p" && echo "$p"; done
  } | sort -u)
  if [[ ${#holders[@]} -gt 0 ]]; then
    mapfile -t pids < <(ns_members "${holders[@]}")
    terminate "processes of the nodes" 3 "${pids[@]}" || true
  fi
  [[ -n ${BRIDGE:-} ]] || return 0
  local link
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^${VETH_PREFIX}[0-9]+$" || true); do
    ip link del "$link" 2>/dev/null || true
  done
  if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link del "$BRIDGE" || true; fi
  rm -f "$RUN"/node-*.pid "$RUN"/node-*.pid.tmp
}

# check_network_gone: fails, naming them, when links of this cluster remain.
check_network_gone() {
  [[ -n ${BRIDGE:-} ]] || return 0
  local left
  left=$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' \
    | grep -E "^($BRIDGE|${VETH_PREFIX}[0-9]+)$" | tr '\n' ' ' || true)
  [[ -z $left ]] && return 0
  echo "$PROG: network interfaces of the cluster in $DIR are still there: $left" >&2
  return 1
}
