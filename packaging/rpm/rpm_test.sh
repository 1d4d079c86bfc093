#!/usr/bin/env bash
# rpm_test.sh BUILD_DIR: the spec kept honest. Builds the RPMs
# (scripts/build-rpm.sh into BUILD_DIR/rpm), then checks that
#  - rpmlint reports no error;
#  - each package holds exactly the files it should, its config files are
#    marked as config, Release names the Slurm it was built against and the
#    spank package requires that Slurm's release series;
#  - they install with `rpm --root SCRATCH -i --nodeps` into an empty root
#    (no shell there: the scriptlets are rpm's Lua), every file in place;
#  - the installed plugin, recipes and ix-stepd (recipe_dir= and stepd=
#    pointing into the scratch root) run a dep4 step on a local cluster of
#    their own with the fake engine, and the ix-stepd that ran is the
#    installed one;
#  - `rpm -e` leaves nothing but a changed config file (as .rpmsave).
# Needs root, IX_FAKES_BIN_DIR (the fakes), SLURM_CONF unset or ignored;
# IX_RPMS (optional): a file listing RPMs build-rpm.sh built, used instead
# of building them again.
set -uo pipefail
build=${1:?usage: rpm_test.sh BUILD_DIR}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
work=$build/rpm-test
rm -rf "$work"; mkdir -p "$work"
root=$work/root
cluster=$work/cluster
libdir=$(rpm --eval '%{_libdir}')
# The cluster of step 5: the installed plugin, recipes and ix-stepd, with a
# lease and run directory of its own (lib.sh's check_clean reads them here).
export IX_CLUSTER_DIR=$cluster SLURM_CONF=$cluster/etc/slurm.conf
export IX_SLURMCTLD_PORT=${IX_RPM_CTLD_PORT:-16827} IX_SLURMD_PORT=${IX_RPM_SLURMD_PORT:-16828}
export IXCTL=$root/usr/sbin/ixctl
export IX_SPANK_PLUGIN=$root$libdir/slurm/spank_inferencex.so IX_RECIPE_DIR=$root/usr/share/inferencex/recipes
export IX_SPANK_ARGS="stepd=$root/usr/libexec/inferencex/ix-stepd topology=$repo/tests/fixtures/topology/hgx-b300-4tib.xml memlock=keep lease_dir=$work/ports run_dir=$work/steps"
. "$repo/tests/integration/lib.sh"
ix_require_env IX_FAKES_BIN_DIR
die() { echo "FAIL: $*"; exit 1; }
# Each part says "ok" only when it added no failure.
mark=0
part() { mark=$failures; }
passed() { if [[ $failures -eq $mark ]]; then echo "ok: $*"; fi; }
cleanup() {
  IX_CLUSTER_DIR=$cluster "$repo/scripts/local-cluster.sh" stop >/dev/null 2>&1
  rm -rf "$root"
}
trap cleanup EXIT

# 1. Build, or take the RPMs build-rpm.sh already built from this checkout
#    (IX_RPMS: the file of their paths it printed; scripts/test.sh builds
#    them during the integration tests, whose waits leave the CPU idle).
if [[ -n ${IX_RPMS:-} ]]; then
  mapfile -t rpms <"$IX_RPMS" || die "IX_RPMS=$IX_RPMS: cannot read it"
else
  mapfile -t rpms < <("$repo/scripts/build-rpm.sh" "$build") || die "build-rpm.sh"
fi
binary=() srpm=
for r in "${rpms[@]}"; do
  if [[ $r == *.src.rpm ]]; then srpm=$r; else binary+=("$r"); fi
done
[[ ${#binary[@]} -eq 3 && -n $srpm ]] || die "expected 3 RPMs and a source RPM, got: ${rpms[*]}"
pkg() { # pkg NAME: the binary RPM of package NAME
  local r
  for r in "${binary[@]}"; do [[ $(rpm -qp --qf '%{NAME}' "$r" 2>/dev/null) == "$1" ]] && { echo "$r"; return; }; done
  return 1
}
spank=$(pkg inferencex-slurm-spank) && agent=$(pkg inferencex-node-agent) && submit=$(pkg inferencex-submit) ||
  die "the RPMs are not inferencex-slurm-spank, inferencex-node-agent and inferencex-submit: ${binary[*]}"
echo "ok: built $(for r in "${rpms[@]}"; do basename "$r"; done | tr '\n' ' ')"

part
# 2. rpmlint (with the spec's rpmlintrc): warnings are explained in the
#    spec; an error fails.
lint=$(rpmlint -r "$repo/packaging/rpm/inferencex-slurm.rpmlintrc" "${binary[@]}" "$srpm" 2>&1)
summary=$(tail -n 1 <<<"$lint")
if ! grep -Eq ' 0 errors' <<<"$summary"; then fail "rpmlint: $(grep -E ': E: ' <<<"$lint")"; fi
passed "rpmlint: $summary"

part
# 3. File lists, config files, Release and Requires.
unitdir=$(rpm -qlp "$agent" | grep '/ix-node-agent.service$')
recipes=$(cd "$repo/recipes" && for f in *.yaml; do echo "/usr/share/inferencex/recipes/$f"; done)
expect_files() { # expect_files RPM FILE...: the RPM's files (docs, man pages and rpm's build-id links aside) are exactly FILE...
  local rpm=$1; shift
  local got want
  got=$(rpm -qlp "$rpm" | grep -Ev '^/usr/share/(doc|man)/|^/usr/lib/\.build-id(/|$)' | sort)
  want=$(printf '%s\n' "$@" | sort)
  [[ $got == "$want" ]] || fail "$(basename "$rpm"): files differ from the expected list:
$(diff <(echo "$want") <(echo "$got"))"
}
# shellcheck disable=SC2086
expect_files "$spank" "$libdir/slurm/spank_inferencex.so" /usr/libexec/inferencex /usr/libexec/inferencex/ix-stepd \
  /usr/sbin/ixctl /etc/slurm/plugstack.conf.d /etc/slurm/plugstack.conf.d/inferencex.conf \
  /usr/share/inferencex /usr/share/inferencex/recipes $recipes
expect_files "$agent" /usr/sbin/ix-node-agent "$unitdir" /etc/inferencex /etc/inferencex/agent.conf
examples=$(cd "$repo/recipes/examples" && for f in *.yaml; do echo "/usr/share/inferencex/examples/$f"; done)
# shellcheck disable=SC2086
expect_files "$submit" /usr/bin/ixsubmit /usr/share/inferencex /usr/share/inferencex/examples $examples
[[ $unitdir == */lib/systemd/system/ix-node-agent.service ]] || fail "unit installed at $unitdir"
for spec in "$spank:ixctl.8 spank_inferencex.8" "$agent:ix-node-agent.8" "$submit:ixsubmit.1"; do
  for page in ${spec#*:}; do
    rpm -qlp "${spec%%:*}" | grep -q "/usr/share/man/man${page##*.}/$page" || fail "$(basename "${spec%%:*}"): no man page $page"
  done
done
[[ $(rpm -qcp "$spank") == /etc/slurm/plugstack.conf.d/inferencex.conf ]] || fail "spank config files: $(rpm -qcp "$spank")"
[[ $(rpm -qcp "$agent") == /etc/inferencex/agent.conf ]] || fail "agent config files: $(rpm -qcp "$agent")"
[[ -z $(rpm -qcp "$submit") ]] || fail "submit config files: $(rpm -qcp "$submit")"
slurm=$("$repo/packaging/rpm/slurm-version.sh")
series=${slurm%.*}
release=$(rpm -qp --qf '%{RELEASE}' "$spank")
[[ $release == *slurm$slurm* ]] || fail "Release $release does not name Slurm $slurm"
requires=$(rpm -qp --requires "$spank")
grep -qx "slurm >= $series" <<<"$requires" || fail "the spank package does not require slurm >= $series: $requires"
grep -qx "slurm < ${series%.*}.$(printf '%02d' $((10#${series#*.} + 1)))" <<<"$requires" ||
  fail "the spank package does not bound slurm below the next series: $requires"
for r in "$spank" "$agent" "$submit"; do
  # The packages never restart slurmd (a scriptlet may reload systemd and
  # stop or restart the agent).
  if rpm -qp --scripts "$r" | grep -q slurmd; then fail "$(basename "$r"): a scriptlet touches slurmd"; fi
done
passed "file lists, config files, Release $release, Requires slurm $series"

part
# 4. Install into an empty root.
mkdir -p "$root"
rpm --root "$root" --initdb || die "rpm --initdb"
# Signed by the key build-rpm.sh exported beside them.
rpm --root "$root" --import "$build/rpm/RPM-GPG-KEY-inferencex-slurm" || die "rpm --import of the build's key"
for r in "${rpms[@]}"; do
  rpm --root "$root" -K "$r" | grep -q 'signatures OK' || fail "$(basename "$r") is not signed by the build's key: $(rpm --root "$root" -K "$r")"
done
if ! out=$(rpm --root "$root" -i --nodeps "${binary[@]}" 2>&1) || grep -qi 'scriptlet' <<<"$out"; then
  die "rpm -i into $root: $out"
fi
for f in $(rpm --root "$root" -qa --qf '[%{FILENAMES}\n]'); do
  [[ -e $root$f ]] || fail "installed file missing: $f"
done
[[ -x $root/usr/libexec/inferencex/ix-stepd && -x $root/usr/sbin/ixctl && -x $root/usr/bin/ixsubmit ]] ||
  fail "installed programs are not executable"
configs=$(rpm --root "$root" -qa --configfiles | grep '^/' | sort | tr '\n' ' ')
[[ $configs == "/etc/inferencex/agent.conf /etc/slurm/plugstack.conf.d/inferencex.conf " ]] ||
  fail "installed config files: $configs"
grep -q "^required $libdir/slurm/spank_inferencex.so" "$root/etc/slurm/plugstack.conf.d/inferencex.conf" ||
  fail "inferencex.conf does not load the installed plugin"
# The installed programs' defaults are the installed paths.
strings "$root$libdir/slurm/spank_inferencex.so" | grep -F /usr/libexec/inferencex/ix-stepd >/dev/null ||
  fail "the installed plugin's default stepd is not /usr/libexec/inferencex/ix-stepd"
"$root/usr/bin/ixsubmit" plan --help | grep -q '/usr/share/inferencex/recipes' ||
  fail "the installed ixsubmit's default recipe directory is not /usr/share/inferencex/recipes"
"$root/usr/sbin/ix-node-agent" --check --config "$root/etc/inferencex/agent.conf" >/dev/null ||
  fail "ix-node-agent --check rejects the installed agent.conf"
passed "installed into $root with every file in place"

part
# 5. The installed plugin runs a dep4 step on a cluster of its own.
"$repo/scripts/local-cluster.sh" start >"$work/cluster.out" 2>&1 || die "local cluster: $(cat "$work/cluster.out")"
mkdir -p "$work/step"
# The task records which ix-stepd runs beside it: the one whose argv[0] is
# ix-stepd, by its executable.
IX_RESULT_DIR=$work/step FAKE_VLLM_RECORD_DIR=$work/step \
  srun --gres=gpu:4 --inferencex-recipe=dsv41flash-fp4-b300-vllm --inferencex-arm=dep4 --inferencex-conc=64 \
  bash -c 'ix-fake-client --sessions 4 --turns 2 --out "$IX_RESULT_DIR/result.json" &&
           for p in /proc/[0-9]*; do
             a=$({ tr "\0" "\n" <"$p/cmdline" | head -n 1; } 2>/dev/null)
             if [[ $a == ix-stepd ]]; then readlink "$p/exe"; fi
           done >"$IX_RESULT_DIR/stepd-exe"' >"$work/step/out" 2>"$work/step/err" ||
  fail "dep4 step with the installed plugin: $(cat "$work/step/err")"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]; assert s["failed"] == 0, s' \
  "$work/step/result.json" || fail "dep4 step: the client's result"
[[ $(sort -u "$work/step/stepd-exe") == "$root/usr/libexec/inferencex/ix-stepd" ]] ||
  fail "the step ran ix-stepd from '$(cat "$work/step/stepd-exe")', not the installed one"
check_clean dep4
"$repo/scripts/local-cluster.sh" stop >/dev/null 2>&1
passed "a dep4 step ran on the installed plugin, recipes and ix-stepd"

part
# 6. Erase: nothing left but a changed config file.
echo "# changed by the site" >>"$root/etc/inferencex/agent.conf"
out=$(rpm --root "$root" -e inferencex-slurm-spank inferencex-node-agent inferencex-submit 2>&1) || fail "rpm -e: $out"
dbpath=$(rpm --eval '%{_dbpath}')
left=$(cd "$root" && find . \( -type f -o -type l \) ! -path ".$dbpath/*" | sort)
[[ $left == "./etc/inferencex/agent.conf.rpmsave" ]] || fail "after rpm -e, left in the root: $left"
passed "rpm -e left only the changed agent.conf (as .rpmsave)"
ix_finish rpm_test
