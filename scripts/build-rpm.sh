#!/usr/bin/env bash
# build-rpm.sh [BUILD_DIR]: builds the RPMs of inferencex-slurm from this
# checkout (packaging/rpm/inferencex-slurm.spec) with rpmbuild and its own
# compiler flags: a source tarball of the working tree's files (tracked, and
# untracked ones git does not ignore), then `rpmbuild -ba` in
# BUILD_DIR/rpm/rpmbuild (default BUILD_DIR: <repo>/build), signing them
# (below). Prints the RPMs' paths, one a line. Quiet unless something
# fails; the full log is BUILD_DIR/rpm/rpmbuild.log.
# Environment: IX_RPM_SIGN_KEY (the key to sign with), IX_RPM_PACKAGER (the
# Packager tag), IX_SLURM_INCLUDE_DIR (where slurm/slurm_version.h is).
#
# The packages are built against the Slurm whose header is installed
# (slurm/slurm_version.h): its version goes into Release. On Debian, rpm's
# database knows no packages, so the spec's BuildRequires (EL names) are
# not checked here (--nodeps); the build itself needs what
# scripts/bootstrap.sh installs, plus Debian's `rpm`.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
build=${1:-$repo/build}
out=$build/rpm
spec=$repo/packaging/rpm/inferencex-slurm.spec
die() { echo "build-rpm.sh: $*" >&2; exit 1; }

command -v rpmbuild >/dev/null || die "rpmbuild not found (Debian: apt-get install rpm)"
# The spec's Version must be the project's (CMakeLists.txt).
version=$(sed -n 's/^project(inferencex-slurm VERSION \([0-9.]*\) .*/\1/p' "$repo/CMakeLists.txt")
spec_version=$(sed -n 's/^Version: *//p' "$spec")
[[ -n $version && $version == "$spec_version" ]] ||
  die "the spec's Version ($spec_version) is not CMakeLists.txt's project VERSION ($version)"

slurm_version=$("$repo/packaging/rpm/slurm-version.sh" "${IX_SLURM_INCLUDE_DIR:-/usr/include}") || exit 1

rm -rf "$out"
mkdir -p "$out/rpmbuild/SOURCES"
name=inferencex-slurm-$version
tarball=$out/rpmbuild/SOURCES/$name.tar.gz
# The working tree's files as git sees them (deleted ones left out), under
# NAME/; build trees and other ignored files stay out.
(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
   while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done |
   tar --create --gzip --file "$tarball" --null --files-from=- --transform "s,^,$name/," --owner=0 --group=0 \
     --sort=name) || die "could not make the source tarball $tarball"

log=$out/rpmbuild.log
packager=${IX_RPM_PACKAGER:-inferencex-slurm build <root@$(hostname -f 2>/dev/null || hostname)>}
if ! rpmbuild -ba --nodeps "$spec" \
     --define "_topdir $out/rpmbuild" \
     --define "_sourcedir $out/rpmbuild/SOURCES" \
     --define "packager $packager" \
     --define "slurm_version $slurm_version" >"$log" 2>&1; then
  grep -E 'error|Error' -A5 "$log" | head -40 >&2 || true
  tail -n 20 "$log" >&2
  die "rpmbuild failed (full log: $log)"
fi
mapfile -t rpms < <(find "$out/rpmbuild/RPMS" "$out/rpmbuild/SRPMS" -name '*.rpm' | sort)

# Signed with IX_RPM_SIGN_KEY (a key of the caller's gpg keyring: the
# site's), else with this build tree's own key, made once in
# BUILD_DIR/rpm-key (no passphrase; a key for trying packages, not for a
# cluster's repository). Its public key is exported beside the RPMs, for
# `rpm --import` before `rpm -K`.
sign_home=${GNUPGHOME:-$HOME/.gnupg} key=${IX_RPM_SIGN_KEY:-}
if [[ -z $key ]]; then
  sign_home=$build/rpm-key key="inferencex-slurm build key (this build tree only)"
  if [[ ! -f $sign_home/done ]]; then
    rm -rf "$sign_home"; mkdir -m 0700 -p "$sign_home"
    GNUPGHOME=$sign_home gpg --batch --quiet --passphrase '' --quick-gen-key "$key" rsa3072 sign never \
      >>"$log" 2>&1 || die "could not make a signing key in $sign_home (full log: $log)"
    touch "$sign_home/done"
  fi
fi
if ! GNUPGHOME=$sign_home rpmsign --addsign --define "__gpg $(command -v gpg)" --define "_gpg_name $key" --define "_gpg_path $sign_home" \
       "${rpms[@]}" >>"$log" 2>&1; then
  GNUPGHOME=$sign_home gpgconf --kill gpg-agent 2>/dev/null || true
  die "rpmsign with key '$key' failed (full log: $log)"
fi
GNUPGHOME=$sign_home gpg --batch --armor --export "$key" >"$out/RPM-GPG-KEY-inferencex-slurm" 2>>"$log"
# Where rpm is not the system's package manager (Debian), this build tree's
# key also goes into rpm's database, so `rpm -K` and rpmlint here verify
# the packages; on an EL host import a key yourself, if you trust it.
if [[ -z ${IX_RPM_SIGN_KEY:-} && -f /etc/debian_version ]]; then
  keyid=$(GNUPGHOME=$sign_home gpg --batch --with-colons --list-keys "$key" 2>/dev/null |
          awk -F: '$1 == "pub" { print tolower(substr($5, 9)); exit }')
  rpm -q "gpg-pubkey-$keyid" >/dev/null 2>&1 || rpm --import "$out/RPM-GPG-KEY-inferencex-slurm" ||
    die "could not import $out/RPM-GPG-KEY-inferencex-slurm into rpm's database"
fi
# The agent gpg started for this key must not outlive the build.
[[ -n ${IX_RPM_SIGN_KEY:-} ]] || GNUPGHOME=$sign_home gpgconf --kill gpg-agent 2>/dev/null || true
# rpmlint loads a *.rpmlintrc beside the one folder or RPM it checks.
for r in "${rpms[@]}"; do cp "$repo/packaging/rpm/inferencex-slurm.rpmlintrc" "$(dirname "$r")/"; done
printf '%s\n' "${rpms[@]}"
