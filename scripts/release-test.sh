#!/usr/bin/env bash
# release-test.sh RELEASE [--quick]: builds and tests the project against
# another Debian release's Slurm (trixie: 24.11, sid: 26.05), in the chroot
# scripts/debian-chroot.sh keeps, with that release's compiler, libraries and
# daemons. Run as root, with no other local cluster running on this machine
# (the chroot's cluster uses the same ports, network and bridge names).
#
#   1. the chroot (cached; made and filled on first use);
#   2. the build in build-RELEASE with warnings as errors: everything, or
#      with --quick only the plugin, ix-stepd, ixctl and the fakes the
#      cluster tests below run;
#   3. the unit tests (not with --quick);
#   4. the integration tests on a local cluster of the release's own
#      slurmctld, slurmd and munge: every one, or with --quick the
#      single-node step tests (cluster_smoke, spank_options, step, step_stop)
#      and the two-node ones (multinode_cluster, multinode_step: a failed
#      part of a step across nodes ends it on both, no slurmstepd crash);
#   5. when the host's own build exists (build/, bookworm's Slurm 22.05), that
#      plugin in the release's slurmd: refused with Slurm's "Incompatible
#      Slurm plugin version" in slurmd's log, the step not run.
#
# Output: one line a stage; the full logs in build-RELEASE/release-test/.
# Exit status 0 only when every stage passed.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
release=${1:-}
quick=0
[[ ${2:-} == --quick ]] && quick=1
case $release in
  trixie | sid) ;;
  *) echo "usage: release-test.sh trixie|sid [--quick]" >&2; exit 2 ;;
esac
build=$repo/build-$release
logs=$build/release-test
chroot_sh=$repo/scripts/debian-chroot.sh
status=0

# stage NAME CMD...: CMD's output to logs/NAME.log; a line saying how it went.
stage() {
  local name=$1 start=$SECONDS; shift
  mkdir -p "$logs"
  if "$@" >"$logs/$name.log" 2>&1; then
    echo "ok: $release: $name ($((SECONDS - start)) s)"
    return 0
  fi
  status=1
  echo "FAIL: $release: $name ($((SECONDS - start)) s); the end of $logs/$name.log:"
  tail -n 40 "$logs/$name.log"
  return 1
}

stage setup "$chroot_sh" "$release" setup || exit 1
slurm=$("$chroot_sh" "$release" run packaging/rpm/slurm-version.sh 2>/dev/null)
echo "$release: Slurm $slurm, $("$chroot_sh" "$release" run sh -c 'g++ --version | head -1' 2>/dev/null)"

targets=""
if [[ $quick -eq 1 ]]; then
  targets="spank_inferencex ix-stepd ixctl vllm vllm-router mooncake_master ix-fake-client"
  # Not built here: an ixsubmit of an earlier full build would be stale, and
  # multinode_step runs its sweep only when there is one.
  rm -f "$build/submitter/ixsubmit"
fi
stage build "$chroot_sh" "$release" run env IX_BUILD_TARGETS="$targets" scripts/build.sh "$build" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" || exit 1
if [[ $quick -eq 0 ]]; then
  stage unit "$chroot_sh" "$release" run ctest --test-dir "$build" -L unit -j "$(nproc)" --output-on-failure
fi

# `container` cannot run in a chroot: a task that joins the container's mount
# namespace (setns) gets that namespace's root, and pivot_root from inside a
# chroot leaves the host's root there, not the chroot's (docs/COMPATIBILITY.md).
filter=(-E '^container$')
if [[ $quick -eq 1 ]]; then
  filter=(-R '^(local_cluster_start|local_cluster_stop|cluster_smoke|spank_options|step|step_stop|multinode_cluster|multinode_step)$')
fi
stage integration "$chroot_sh" "$release" run ctest --test-dir "$build" -L integration "${filter[@]}" --output-on-failure

# A plugin built against another release: Slurm refuses it by its version.
host_plugin=$repo/build/spank_plugin/spank_inferencex.so
if [[ -f $host_plugin ]]; then
  stage mismatch "$chroot_sh" "$release" run env IX_SPANK_PLUGIN="$host_plugin" \
    IX_CLUSTER_DIR="$build/mismatch-cluster" IX_RECIPE_DIR="$repo/recipes" \
    tests/integration/plugin_mismatch_test.sh
fi
exit $status
