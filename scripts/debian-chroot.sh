#!/usr/bin/env bash
# debian-chroot.sh RELEASE COMMAND [ARGS...]: builds and runs the project in
# a Debian chroot of RELEASE (trixie: Slurm 24.11, sid: the newest Slurm;
# bookworm is the host's own release and works too), so every Debian release
# that ships Slurm can be built and tested on one machine. Run as root.
#
#   setup            make the chroot (debootstrap) and install the project's
#                    dependencies in it with scripts/bootstrap.sh
#   build [ARGS...]  setup, then scripts/build.sh build-RELEASE ARGS... in it
#   run CMD...       setup, then run CMD in the repository inside the chroot
#                    (e.g. run ctest --test-dir build-sid -L unit)
#
# The chroot is cached in IX_CHROOT_DIR (default
# /var/cache/inferencex-slurm/chroot/RELEASE): a second run reuses it, and
# bootstrap.sh does not touch apt when nothing is missing. Packages come
# from debootstrap's default Debian mirror, or IX_DEBIAN_MIRROR, and nowhere
# else. The repository is bind-mounted at its own path, with /proc, /sys and
# /dev, in a private mount namespace: the mounts end with the command and
# never show on the host. The build directory is build-RELEASE in the
# repository (ignored by git), so each release keeps its own.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
self="$repo/scripts/$(basename "${BASH_SOURCE[0]}")"

die() { echo "debian-chroot.sh: $*" >&2; exit 1; }
usage() { sed -n '2,20s/^# \{0,1\}//p' "$self" >&2; exit 2; }

# Second stage, run by the first one inside `unshare --mount`: mounts what
# the chroot needs, then runs the command in it as root, in the repository,
# with a clean environment (the host's PATH and variables do not leak in).
if [[ ${1:-} == __inside ]]; then
  root=$2; shift 2
  mount --make-rprivate /
  # The chroot's / a mount point of its own, as a real root is: tests that
  # make their mounts private (mount --make-rprivate /) need one.
  mount --bind "$root" "$root"
  mount -t proc proc "$root/proc"
  mount --rbind /sys "$root/sys"
  mount --rbind /dev "$root/dev"
  mkdir -p "$root$repo"
  mount --bind "$repo" "$root$repo"
  # The chroot shares the host's network and hostname, so its name lookups
  # are the host's (as schroot copies them): Slurm 24.11's slurmctld
  # resolves srun's host (`hostname`) to reach it, and without the host's
  # /etc/hosts every such message waited 10 s of retries.
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  cp /etc/hosts "$root/etc/hosts"
  exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/sh -c 'cd "$1" && shift && exec "$@"' sh "$repo" "$@"
fi

[[ $# -ge 2 ]] || usage
release=$1 cmd=$2; shift 2
case $release in
  bookworm | trixie | sid) ;;
  *) die "unknown release '$release' (bookworm, trixie or sid)" ;;
esac
case $cmd in
  setup | build | run) ;;
  *) die "unknown command '$cmd' (setup, build or run)" ;;
esac
[[ $cmd != run || $# -gt 0 ]] || die "run needs a command, e.g.: $0 $release run ctest --test-dir build-$release -L unit"
[[ $(id -u) -eq 0 ]] || die "must run as root (debootstrap, chroot and mount need it)"
root=${IX_CHROOT_DIR:-/var/cache/inferencex-slurm/chroot/$release}

# in_chroot CMD...: runs CMD in the repository inside the chroot.
in_chroot() { unshare --mount "$self" __inside "$root" "$@"; }

# debootstrap is the only host package this script needs; bookworm's knows
# trixie and sid, and debian-archive-keyring has their keys.
if ! command -v debootstrap >/dev/null 2>&1; then
  echo "debian-chroot.sh: installing debootstrap on the host" >&2
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q debootstrap >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 || true
      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q debootstrap >/dev/null; } ||
    die "could not install debootstrap (apt-get install debootstrap)"
fi

# One setup at a time per chroot; a second caller waits for the first.
mkdir -p "$(dirname "$root")"
exec 9>"$root.lock"
flock 9

# A chroot is complete once the marker exists; a partial one (an interrupted
# debootstrap) is removed and made again rather than repaired.
if [[ ! -e $root/.ix-debootstrap-done ]]; then
  if [[ -e $root ]]; then
    echo "debian-chroot.sh: removing the incomplete chroot $root" >&2
    findmnt -rn -o TARGET | grep -q "^$root/" && die "$root has mounts below it; unmount them first"
    rm -rf --one-file-system "$root"
  fi
  echo "debian-chroot.sh: debootstrap $release into $root (a few minutes)" >&2
  log=$(mktemp /tmp/ix-debootstrap.XXXXXX.log)
  if ! debootstrap --variant=minbase --include=ca-certificates "$release" "$root" ${IX_DEBIAN_MIRROR:+"$IX_DEBIAN_MIRROR"} >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    die "debootstrap $release failed (full log: $log)"
  fi
  rm -f "$log"
  # Packages installed in the chroot must not start their daemons there
  # (munge, slurmd): the tests run their own, and a daemon left running
  # would hold the host's ports. 101 is "action forbidden" to invoke-rc.d.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  touch "$root/.ix-debootstrap-done"
fi

# sid's Release file is valid for a week only; apt would refuse one from a
# mirror or cache that serves a snapshot of the archive (as this project's
# machines have) as expired, so apt in the chroot does not check.
echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99ix-valid-until"
# bootstrap.sh installs what is missing and does nothing when all is there.
in_chroot scripts/bootstrap.sh || die "scripts/bootstrap.sh failed in the $release chroot"
exec 9>&-

case $cmd in
  setup) ;;
  build) in_chroot scripts/build.sh "$repo/build-$release" "$@" ;;
  run) in_chroot "$@" ;;
esac
