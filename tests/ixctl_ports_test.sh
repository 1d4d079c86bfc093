#!/usr/bin/env bash
# ixctl ports end to end: lease, list, release, a held lease blocks others,
# the lease dies with its holder, and bad input leases nothing.
# Usage: ixctl_ports_test.sh IXCTL
set -uo pipefail
ixctl=$1
dir=$(mktemp -d /tmp/ix-ixctl-test.XXXXXX); trap 'kill $holder 2>/dev/null; rm -rf "$dir"' EXIT
leases=$dir/leases
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
range=(--range 23100-23104 --lease-dir "$leases")

# A holder process that lives until killed; leases are made on its behalf.
sleep 300 & holder=$!
out=$("$ixctl" ports lease --owner 5.0 --names PORT,ENGINE_PORT --block SCAN=3 --pid "$holder" "${range[@]}" --json) \
  || fail "lease failed: $out"
[[ $out == *'"ports":{"PORT":23100,"ENGINE_PORT":23101,"SCAN":23102}'* ]] || fail "unexpected lease: $out"
[[ $(stat -c "%U %a" "$leases") == "root 700" || $(id -u) -ne 0 ]] || fail "lease dir not root-owned 0700: $(stat -c "%U %a" "$leases")"

# The range is full: another owner is refused, naming range, ask and holder.
err=$("$ixctl" ports lease --owner 6.0 --names X "${range[@]}" 2>&1) && fail "lease in a full range succeeded"
[[ $err == *"in 23100-23104 for 6.0: asked for 1 port(s) (X); 5 leased, held by 5.0 (pid $holder): 5 ports"* ]] \
  || fail "exhaustion message: $err"

list=$("$ixctl" ports list "${range[@]}")
[[ $list == *"23102-23104"*SCAN*5.0* ]] || fail "list does not show the block: $list"

# The holder dies: its leases are reclaimed by the next allocation.
kill -9 $holder; wait $holder 2>/dev/null
sleep 300 & holder=$!
out=$("$ixctl" ports lease --owner 6.0 --names X --pid "$holder" "${range[@]}") || fail "no reclaim: $out"
[[ $out == "X=23100" ]] || fail "reclaimed lease: $out"
[[ $("$ixctl" ports release --owner 6.0 "${range[@]}") == "released 1 lease(s) of 6.0" ]] || fail "release"
[[ $("$ixctl" ports list "${range[@]}" --json) == '{"leases":[]}' ]] || fail "leases left after release"

# A foreign listener is skipped.
python3 -c 'import socket,sys,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", 23100)); s.listen(); print("up", flush=True); time.sleep(60)' >"$dir/listener" &
listener=$!
for _ in $(seq 50); do [[ -s $dir/listener ]] && break; sleep 0.1; done
out=$("$ixctl" ports lease --owner 7.0 --names A --pid "$holder" "${range[@]}") || fail "lease next to a listener: $out"
[[ $out == "A=23101" ]] || fail "foreign listener's port was leased: $out"
kill $listener
"$ixctl" ports release --owner 7.0 "${range[@]}" >/dev/null

# Bad input: clear error, nothing leased.
check_bad() {
  local pattern=$1; shift
  local e; e=$("$ixctl" ports lease --owner 8.0 --names A --pid "$holder" "$@" 2>&1) && fail "accepted: $*"
  [[ $e =~ $pattern ]] || fail "message for $*: $e"
}
check_bad "reversed" --range 23104-23100 --lease-dir "$leases"
check_bad "within 1-65535" --range 23100-70000 --lease-dir "$leases"
check_bad "overlaps the kernel's ephemeral range" --range 40000-40010 --lease-dir "$leases"
touch "$dir/a-file"
check_bad "not a directory" --range 23100-23104 --lease-dir "$dir/a-file"
check_bad "--block expects NAME=K" "${range[@]}" --block SCAN=0
[[ $("$ixctl" ports list "${range[@]}" --json) == '{"leases":[]}' ]] || fail "bad input leased something"

[[ $failures -eq 0 ]] || exit 1
echo "ixctl ports: all checks passed"
