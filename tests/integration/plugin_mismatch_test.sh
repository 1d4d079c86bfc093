#!/usr/bin/env bash
# A plugin built against another Slurm release than the one that loads it:
# Slurm refuses it by its plugin_version before calling anything of it, and
# with `required` in plugstack.conf slurmd does not start. Checks that the
# refusal is Slurm's "Incompatible ... plugin ... version" in slurmd's log
# (22.05: "Incompatible Slurm plugin version (X)"; 26.05: "Incompatible
# Slurm plugin PATH version (X)", then "Incompatible plugin version"),
# and that srun refuses too; no step runs. scripts/release-test.sh runs this
# in a chroot of another release with the host's build.
# Needs: root, IX_SPANK_PLUGIN (the other release's plugin), IX_CLUSTER_DIR
# (a directory of its own), IX_RECIPE_DIR.
set -uo pipefail
PROG=${0##*/}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
cluster=$repo/scripts/local-cluster.sh
fail() { echo "$PROG: FAIL: $*" >&2; "$cluster" stop >/dev/null 2>&1; exit 1; }
[[ -r ${IX_SPANK_PLUGIN:-} ]] || fail "IX_SPANK_PLUGIN (a plugin of another release) is not readable"
export SLURM_CONF=$IX_CLUSTER_DIR/etc/slurm.conf

if IX_START_TIMEOUT=10 "$cluster" restart >"$IX_CLUSTER_DIR.start.log" 2>&1; then
  fail "the cluster started with a plugin of another release"
fi
log=$IX_CLUSTER_DIR/log/slurmd.log
line=$(grep -m1 -E "Incompatible .*plugin.* version" "$log" 2>/dev/null) ||
  fail "slurmd's log does not say 'Incompatible ... plugin ... version': $(tail -5 "$log" 2>/dev/null)"
echo "$PROG: ok: slurmd refused the plugin: $line"
# srun loads plugstack.conf too: it stops before asking for anything.
if srun --inferencex-arm=tp4 true >"$IX_CLUSTER_DIR.srun.log" 2>&1; then fail "srun ran a step"; fi
grep -qE "Incompatible .*plugin.* version" "$IX_CLUSTER_DIR.srun.log" ||
  fail "srun does not say why: $(cat "$IX_CLUSTER_DIR.srun.log")"
echo "$PROG: ok: srun refused it: $(grep -m1 -E "Incompatible .*plugin" "$IX_CLUSTER_DIR.srun.log")"
"$cluster" stop >/dev/null 2>&1
exit 0
