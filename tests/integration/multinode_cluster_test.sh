#!/usr/bin/env bash
# The multi-node local cluster (scripts/local-cluster.sh start --nodes 3):
# started in its own directory, on its own ports and /24 (never the CTest
# fixture's cluster), with the plugin loaded as the fixture loads it. Checks:
# every node idle; a two-node step runs on two hosts (hostname); each task
# has its own node's address (NodeAddr) and the two reach each other over
# TCP (a listener on node 1 on the step's first reserved port, a client on
# node 2); SLURM_STEP_RESV_PORTS is set, the same on both tasks, within
# MpiParams=ports=; /run/inferencex is a tmpfs of its own on each node (a
# file written on one is on neither the other nor the host); 'exec' enters
# a node; a plain srun works with the plugin. Then stop leaves no process in
# the nodes' namespaces, no interface, no mount and no process of the
# cluster. Skips (77) when not root. Cleans up on any exit.
# Task scripts are single-quoted on purpose (they expand in the task);
# "check && ok || fail" reports; cleanup runs from the trap.
# shellcheck disable=SC2016,SC2015,SC2317
set -uo pipefail
# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (namespaces, veths, a Slurm cluster)"; exit 77; }
NODES=3
ix_nodes_start "$NODES"

# 1. Every node idle, each with its own NodeAddr.
states=$(sinfo -h -N -o '%N %t' | sort -u | tr '\n' ' ')
[[ $states == "ixn1 idle ixn2 idle ixn3 idle " ]] && ok "sinfo: $states" || fail "sinfo: '$states'"
declare -A addr
for k in 1 2 3; do
  addr[ixn$k]=$(scontrol show node "ixn$k" | grep -o 'NodeAddr=[^ ]*' | cut -d= -f2)
  [[ ${addr[ixn$k]} == "$net.$((10 + k))" ]] || fail "ixn$k: NodeAddr '${addr[ixn$k]}', expected $net.$((10 + k))"
done

# 2. Two nodes, two hostnames.
hosts=$(timeout 20 srun -N2 --ntasks-per-node=1 hostname 2>&1 | sort | tr '\n' ' ')
[[ $hosts == "ixn1 ixn2 " ]] && ok "srun -N2 hostname: $hosts" || fail "srun -N2 hostname: '$hosts'"

# 3. Each task: its node, its address, the step's reserved ports.
out=$(timeout 20 srun -N2 --ntasks-per-node=1 bash -c \
  'echo "$SLURM_NODEID $(hostname) $(ip -4 -o addr show dev eth0 | awk "{print \$4}") ${SLURM_STEP_RESV_PORTS:-none}"' 2>&1 | sort)
echo "$out"
resv=
while read -r id host cidr ports; do
  [[ $cidr == "${addr[$host]:-?}/24" ]] || fail "task $id on $host has address '$cidr', its node's is ${addr[$host]:-?}"
  [[ -n $resv ]] || resv=$ports
  [[ $ports == "$resv" ]] || fail "SLURM_STEP_RESV_PORTS differs between tasks: '$resv' and '$ports'"
done <<<"$out"
[[ $(wc -l <<<"$out") -eq 2 ]] || fail "expected two tasks, got: $out"
if [[ $resv =~ ^([0-9]+)(-([0-9]+))?$ ]]; then
  lo=${BASH_REMATCH[1]} hi=${BASH_REMATCH[3]:-${BASH_REMATCH[1]}}
  ((lo >= MPI_LO && hi <= MPI_HI)) && ok "SLURM_STEP_RESV_PORTS=$resv on both tasks" \
    || fail "SLURM_STEP_RESV_PORTS=$resv is outside MpiParams=ports=$MPI_LO-$MPI_HI"
else
  fail "SLURM_STEP_RESV_PORTS is '$resv' (unset or not a port range)"
fi

# 4. TCP from node 2 to node 1: task 0 listens on its node's address on the
#    step's first reserved port, task 1 connects there (retrying while the
#    listener starts), they trade hostnames; each side prints what it saw.
out=$(timeout 30 srun -N2 --ntasks-per-node=1 python3 -c '
import os, socket, sys, time
port = int(os.environ["SLURM_STEP_RESV_PORTS"].split("-")[0].split(",")[0])
head = sys.argv[1]
me = socket.gethostname()
if os.environ["SLURM_NODEID"] == "0":
    s = socket.create_server((head, port))
    s.settimeout(15)
    c, peer = s.accept()
    got = c.recv(64).decode()
    c.sendall(me.encode())
    print("server", me, "got", got, "from", peer[0], flush=True)
else:
    end = time.time() + 15
    while True:
        try:
            c = socket.create_connection((head, port), timeout=2)
            break
        except OSError:
            if time.time() > end: raise
            time.sleep(0.1)
    c.sendall(me.encode())
    print("client", me, "got", c.recv(64).decode(), "via", c.getsockname()[0], flush=True)
' "${addr[ixn1]}" 2>&1 | sort)
echo "$out"
expect="client ixn2 got ixn1 via ${addr[ixn2]}
server ixn1 got ixn2 from ${addr[ixn2]}"
[[ $out == "$expect" ]] && ok "TCP ixn2 -> ixn1 (${addr[ixn1]}:${resv%%-*})" || fail "TCP between the nodes: expected '$expect'"

# 5. /run/inferencex: a tmpfs of each node's own.
probe=/run/inferencex/multinode-probe.$$
out=$(timeout 20 srun -w ixn1 -N1 bash -c "stat -f -c %T /run/inferencex; echo ixn1 >$probe; cat $probe" 2>&1 | tr '\n' ' ')
[[ $out == "tmpfs ixn1 " ]] || fail "ixn1: /run/inferencex: '$out' (expected tmpfs and the probe written)"
out=$(timeout 20 srun -w ixn2 -N1 bash -c "stat -f -c %T /run/inferencex; test -e $probe && echo seen || echo absent" 2>&1 | tr '\n' ' ')
[[ $out == "tmpfs absent " ]] || fail "ixn2: /run/inferencex: '$out' (expected its own tmpfs without ixn1's probe)"
[[ ! -e $probe ]] || fail "the host sees ixn1's $probe"
out=$(lc exec ixn1 cat "$probe" 2>&1)
[[ $out == ixn1 ]] && ok "/run/inferencex per node (exec ixn1 sees its probe; ixn2 and the host do not)" \
  || fail "exec ixn1 cat $probe: '$out'"

# 6. The plugin is loaded as in the fixture's cluster, and a plain step works.
if [[ -n ${IX_SPANK_PLUGIN:-} && -e $IX_SPANK_PLUGIN ]]; then
  grep -q "^required $IX_SPANK_PLUGIN " "$dir/etc/plugstack.conf" || fail "plugstack.conf lacks the plugin: $(cat "$dir/etc/plugstack.conf")"
  srun --help 2>&1 | grep -q -- --inferencex-arm || fail "srun --help has no --inferencex-arm"
fi
out=$(timeout 20 srun -N3 --ntasks-per-node=1 true 2>&1) && ok "plain srun -N3 with the plugin" || fail "srun -N3 true: $out"

# 7. stop: nothing of the nodes is left: no process in their namespaces (so
#    the namespaces and their mounts are gone), no interface, no process of
#    the cluster.
declare -A ns=()
for k in 1 2 3; do
  for n in $(lc exec "ixn$k" readlink /proc/self/ns/net /proc/self/ns/mnt /proc/self/ns/uts); do ns[$n]=ixn$k; done
done
[[ ${#ns[@]} -eq 9 ]] || fail "expected 9 namespaces of 3 nodes (net, mnt, uts), got: ${!ns[*]}"
hex=$(printf '%02x%02x%02x' ${net//./ })
t0=$(now_ms)
lc stop && _ix_nodes_stopped=1 || fail "stop failed"
ok "stopped in $(($(now_ms) - t0)) ms"
left=
for f in /proc/[0-9]*/ns/net /proc/[0-9]*/ns/mnt /proc/[0-9]*/ns/uts; do
  n=$(readlink "$f" 2>/dev/null) || continue
  [[ -z ${ns[$n]:-} ]] || left+=" ${f#/proc/}(${ns[$n]})"
done
[[ -z $left ]] || fail "processes still in the nodes' namespaces:$left"
links=$(ip -o link show | awk -F': ' '{print $2}' | grep -E "^ixbr$hex$|^ixv${hex}n" | tr '\n' ' ')
[[ -z $links ]] || fail "interfaces left: $links"
! ip -4 -o addr show | grep -q " $net\." || fail "host addresses in $net.0/24 left"
! grep -q ixnode- /proc/self/mountinfo || fail "a node tmpfs is mounted on the host"
procs=$(pgrep -f -- "$dir/" | tr '\n' ' ')
procs+=$(grep -lzx "IX_LOCAL_CLUSTER_DIR=$dir" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | tr '\n' ' ')
[[ -z ${procs// /} ]] || fail "processes of the cluster left: $procs"
lc status >/dev/null; rc=$?
[[ $rc -eq 3 ]] || fail "status after stop exits $rc, expected 3"
[[ $failures -gt 0 ]] || ok "stop left no namespace, interface, mount or process"
ix_finish "${0##*/}"
