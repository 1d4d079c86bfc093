#!/usr/bin/env bash
# test.sh: installs every dependency, builds, and runs every test: the unit
# tests (also under AddressSanitizer and UBSan, built with clang where the
# first build is GCC's) and the integration tests on
# a real local Slurm cluster, which CTest starts and stops itself; then the
# step and two-node tests again against Slurm 26.05 in a Debian sid chroot
# (scripts/release-test.sh). Run as root on Debian 12. Exit status 0 only
# when everything passed.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$repo"

step() { printf '== %s\n' "$*"; }
step "bootstrap (Debian packages)"
scripts/bootstrap.sh
# Debian sid's chroot (Slurm 26.05, for the last stage) is made while the
# host builds: debootstrap and apt mostly wait on the network and the disk.
mkdir -p "$repo/build/test-logs"
scripts/debian-chroot.sh sid setup >"$repo/build/test-logs/chroot-setup.log" 2>&1 &
chroot_setup=$!
step "build"
# Line tables only (-g1, as the clang tree below): backtraces keep their
# functions and lines, and the build takes a fifth less time on 2 cores than
# with full -g (9.5 against 12 minutes, measured 2026-12-06).
scripts/build.sh "$repo/build" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
# One clang tree for the sanitizers and the fuzz targets: every library is
# compiled once with ASan/UBSan and libFuzzer's coverage (-O1), and serves
# both the unit tests and the fuzzers (no benchmarks there).
step "build with clang, -fsanitize=address,undefined and the libFuzzer targets"
scripts/build.sh "$repo/build-asan" -DIX_SANITIZE=ON -DIX_FUZZ=ON -DIX_BUILD_BENCH=OFF -DCMAKE_CXX_COMPILER=clang++

logs=$repo/build/test-logs
mkdir -p "$logs"
status=0
# run_ctest NAME CTEST_ARGS...: full output to build/test-logs/NAME.log; the
# summary on success, the failures on failure.
run_ctest() {
  local name=$1; shift
  if ctest "$@" --output-on-failure >"$logs/$name.log" 2>&1; then
    grep -E 'tests passed|Total Test time' "$logs/$name.log"
  else
    status=1
    grep -E '^\s*[0-9]+/[0-9]+ Test .*(Failed|Timeout|Exception|Not Run)' "$logs/$name.log" || true
    tail -n 60 "$logs/$name.log"
    echo "(full output: $logs/$name.log)"
  fi
}
step "unit tests"
run_ctest unit --test-dir build -L unit -j "$(nproc)"
step "unit tests under ASan/UBSan"
# Without hwloc's PCI plugin (hwloc_pci.so, Debian's libhwloc-plugins: not
# installed on bookworm or sid, pulled in on trixie by libpmix2t64): it keeps
# allocations only its own data points to, and hwloc dlcloses it with every
# topology, so LeakSanitizer reports them (hwloc 2.12: 1016 bytes in 9
# allocations per live topology; a C program that only loads and destroys
# a topology as the project does shows the same, and nothing with the
# plugin kept mapped). Their frames are in the unloaded module, "<unknown
# module>" to LSan, which no suppression can name without hiding the leaks
# of every unloaded library. hwloc's Linux backend still finds the PCI
# devices in sysfs without the plugin, and every other allocation, the
# project's and hwloc's, stays checked. Where the plugin is absent the
# variable changes nothing.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$repo/tests/ubsan.supp \
  HWLOC_PLUGINS_BLACKLIST=hwloc_pci run_ctest unit-asan --test-dir build-asan -L unit -j "$(nproc)"
step "fuzz: every libFuzzer target in fuzz/ (clang, ASan/UBSan), 12 s each over its seed corpus, two at a time"
if ! fuzz/run.sh 12 "$repo/build-asan"; then status=1; fi
# rpmbuild compiles the programs again with its own flags; it runs beside
# the integration tests, niced, on the CPU their waits leave idle (the
# suite: 37.5 against 32 minutes on 2 cores, measured 2026-12-06), and the RPM test takes what it built. Should it
# fail, the RPM test builds them itself and says why.
rpms=$repo/build/rpms.list
rm -f "$rpms"
nice -n 19 scripts/build-rpm.sh "$repo/build" >"$rpms.tmp" 2>"$logs/build-rpm.log" && mv "$rpms.tmp" "$rpms" &
rpm_build=$!
step "integration tests (local Slurm cluster)"
run_ctest integration --test-dir build -L integration
wait "$rpm_build" || true
step "RPM packages: rpmbuild with its own flags, rpmlint, file lists, install into a scratch root, a dep4 step, erase"
if [[ -s $rpms ]]; then
  IX_RPMS=$rpms run_ctest rpm --test-dir build -L rpm
else
  echo "(the RPMs built beside the integration tests failed: $logs/build-rpm.log; the test builds them)"
  run_ctest rpm --test-dir build -L rpm
fi

# Another Slurm release: sid's 26.05, whose API moved furthest from 22.05
# (docs/COMPATIBILITY.md; trixie's 24.11 and the full run: on demand).
step "Slurm 26.05 (Debian sid, chroot): build the plugin, ix-stepd, ixctl and the fakes; step and two-node tests; the host's 22.05 plugin refused"
if ! wait "$chroot_setup"; then
  status=1
  echo "making the sid chroot failed:"; tail -n 30 "$logs/chroot-setup.log"
elif ! scripts/release-test.sh sid --quick; then
  status=1
fi

if [[ $status -eq 0 ]]; then step "all tests passed"; else step "TESTS FAILED"; fi
exit $status
