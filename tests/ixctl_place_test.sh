#!/usr/bin/env bash
# ixctl topology and ixctl place on the HGX B300 fixtures and this machine.
# Usage: ixctl_place_test.sh IXCTL SOURCE_DIR
set -uo pipefail
ixctl=$1 src=$2
fx=$src/tests/fixtures/topology
place=("$ixctl" place --recipe-dir "$src/recipes" --recipe dsv41flash-fp4-b300-vllm)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Topology from a file: 8 GPUs, 0-3 on NUMA 0 and 4-7 on NUMA 1.
topo=$("$ixctl" topology --topology "$fx/hgx-b300-2tib.xml" --json) || fail "topology --topology failed"
python3 - "$topo" <<'PY' || fail "topology JSON"
import json, sys
t = json.loads(sys.argv[1])
numa = [g["numa"] for g in t["gpus"]]
assert numa == [0, 0, 0, 0, 1, 1, 1, 1], numa
assert len([n for n in t["numa_nodes"] if n["cpus"]]) == 2
PY
# Live: this machine, with the host facts.
"$ixctl" topology --json | python3 -c 'import json,sys; t=json.load(sys.stdin); assert "host" in t and t["numa_nodes"], t' \
  || fail "live topology"

# dep4 on GPUs 0-3 of the 4 TiB node fits on NUMA 0.
out=$("${place[@]}" --arm dep4 --conc 64 --topology "$fx/hgx-b300-4tib.xml" --gpus 0,1,2,3 --json) \
  || fail "dep4 on the 4 TiB node refused: $out"
python3 - "$out" <<'PY' || fail "dep4 placement JSON"
import json, sys
p = json.loads(sys.argv[1])
assert p["verdict"] == "fits", p["verdict"]
assert [r["numa"] for r in p["ranks"]] == [0, 0, 0, 0]
cpus = [r["cpus"] for r in p["ranks"]]
assert len(set(cpus)) == 4, cpus
node0 = [n for n in p["numa"] if n["node"] == 0][0]
assert node0["needed_bytes"] == 4 * 189 * 2**30, node0
PY
# ... and is refused when NUMA 0 has only 610 GiB available: exit 1, the message.
err=$("${place[@]}" --arm dep4 --conc 64 --topology "$fx/hgx-b300-4tib.xml" --gpus 0,1,2,3 --numa-free 0=610 2>&1 >/dev/null) \
  && fail "dep4 with 610 GiB free was not refused"
[[ $err == *"dep4 needs 756 GiB on NUMA node 0 (4 ranks x 189 GiB); node 0 has 610 GiB available"* ]] \
  || fail "refusal message: $err"
# GPUs 4-7 land on NUMA 1.
out=$("${place[@]}" --arm dep4 --conc 64 --topology "$fx/hgx-b300-2tib.xml" --gpus 4,5,6,7 --json)
[[ $(python3 -c 'import json,sys; print([r["numa"] for r in json.load(sys.stdin)["ranks"]])' <<<"$out") == "[1, 1, 1, 1]" ]] \
  || fail "dep4 on GPUs 4-7 not on NUMA 1: $out"
# tp4: one process with the cores of its GPUs' node.
out=$("${place[@]}" --arm tp4 --conc 8 --topology "$fx/hgx-b300-2tib.xml" --gpus 0,1,2,3 --json)
[[ $(python3 -c 'import json,sys; r=json.load(sys.stdin)["ranks"]; print(len(r), r[0]["numa"], r[0]["cpus"])' <<<"$out") == "1 0 0-63" ]] \
  || fail "tp4 placement: $out"
# dep16 across two nodes: node 1 places its own ranks 8-15, 4 a socket
# (756 GiB of Engram tables per NUMA node); --node past the arm's nodes is refused.
out=$("${place[@]}" --arm dep16 --conc 64 --node 1 --topology "$fx/hgx-b300-2tib.xml" --gpus 0,1,2,3,4,5,6,7 --json) \
  || fail "dep16 node 1 refused: $out"
python3 - "$out" <<'PY' || fail "dep16 node 1 placement JSON"
import json, sys
p = json.loads(sys.argv[1])
assert p["verdict"] == "fits", p["verdict"]
assert [r["rank"] for r in p["ranks"]] == list(range(8, 16)), p["ranks"]
assert [r["numa"] for r in p["ranks"]] == [0, 0, 0, 0, 1, 1, 1, 1], p["ranks"]
assert sorted(n["needed_bytes"] for n in p["numa"]) == [4 * 189 * 2**30] * 2, p["numa"]
PY
err=$("${place[@]}" --arm dep16 --conc 64 --node 2 --topology "$fx/hgx-b300-2tib.xml" 2>&1) && fail "--node 2 accepted"
[[ $err == *"--node 2 is outside 0..1: arm dep16 runs on 2 nodes"* ]] || fail "--node 2 message: $err"
# Bad input: a GPU the node lacks, a malformed XML file.
err=$("${place[@]}" --arm tp4 --conc 8 --topology "$fx/hgx-b300-2tib.xml" --gpus 0,1,2,9 2>&1) && fail "GPU 9 accepted"
[[ $err == *9* && $err == *0-7* ]] || fail "GPU 9 message: $err"
bad=$(mktemp --suffix=.xml); trap 'rm -f "$bad"' EXIT
printf '<?xml version="1.0"?>\n<topology><object type="Machine"' >"$bad"
err=$("$ixctl" topology --topology "$bad" 2>&1) && fail "malformed XML accepted"
[[ $err == *"$bad"* ]] || fail "malformed XML message does not name the file: $err"
# A stray word is misuse (exit 2), not silently ignored.
err=$("$ixctl" topology --topology "$fx/hgx-b300-2tib.xml" stray 2>&1); rc=$?
[[ $rc -eq 2 && $err == *"ixctl topology"* ]] || fail "stray word: exit $rc: $err"

[[ $failures -eq 0 ]] || exit 1
echo "ixctl topology/place: all checks passed"
