#!/usr/bin/env bash
# node-init.sh NODE DIR - run by local-cluster.sh through
#   unshare --net --uts --mount --propagation private
# as the first process of one node of a multi-node cluster, as root. It makes
# the new namespaces look like a node, then becomes the node's holder: a
# process that keeps the namespaces alive while slurmd restarts, and whose
# end (with every other process in them) removes the node: its veth, its
# mounts. Not a user command.
#
# What a node gets:
#   - its hostname (UTS namespace) = NODE, the Slurm NodeName;
#   - lo up (the veth is added from outside once this process exists);
#   - a fresh sysfs for its network namespace (/sys/class/net shows its own
#     interfaces), with the host's /sys/fs/cgroup moved back under it:
#     slurmd refuses to start without the cgroup tree ("No filesystem
#     mounted on /sys/fs/cgroup"), which is why 'ip netns exec' (it mounts a
#     bare sysfs) cannot start a slurmd;
#   - a tmpfs at /run/inferencex, so the plugin's leases and step
#     directories are the node's own, as on a real node where /run is tmpfs;
#   - DIR/etc/node-resolv.conf on /etc/resolv.conf: no name server (the
#     node cannot reach the host's), so a lookup /etc/hosts does not answer
#     fails at once instead of timing out (nodes.sh says why that matters).
# Then it writes DIR/run/node-NODE.pid (its pid, which 'exec' keeps) and
# sleeps forever, named "ix-node-holder DIR NODE" so that stop finds it.
set -euo pipefail

node=$1 dir=$2
[[ $node =~ ^[a-z][a-z0-9]*$ && $dir == /* ]] || { echo "usage: node-init.sh NODE DIR" >&2; exit 2; }

hostname "$node"
ip link set lo up

# The cgroup tree, rbind-mounted aside, survives the new sysfs mounted over
# /sys and is moved back to its place. The aside directory is on the shared
# file system but the mounts are in this namespace only.
aside=$dir/run/$node.cgroup
mkdir -p "$aside"
mount --rbind /sys/fs/cgroup "$aside"
mount -t sysfs sysfs /sys
mount --move "$aside" /sys/fs/cgroup
rmdir "$aside"

# Only when there is a resolv.conf to cover (a missing one already means
# no name server to glibc); a symlink's target is covered, in this
# namespace only.
if [[ -e /etc/resolv.conf && -f $dir/etc/node-resolv.conf ]]; then
  mount --bind "$dir/etc/node-resolv.conf" /etc/resolv.conf
fi

mkdir -p /run/inferencex
mount -t tmpfs -o mode=0755,size=256m "ixnode-$node" /run/inferencex

# The pid file is the signal that the node is ready; written whole.
echo $$ >"$dir/run/node-$node.pid.tmp"
mv -f "$dir/run/node-$node.pid.tmp" "$dir/run/node-$node.pid"
exec -a "ix-node-holder $dir/ $node" sleep infinity
