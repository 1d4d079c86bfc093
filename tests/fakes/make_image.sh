#!/usr/bin/env bash
# make_image.sh [--env NAME=VALUE]... DEST PROGRAM...
#
# Builds a minimal container rootfs directory for fake_pyxis.so
# (--container-image=DEST): only the given programs (in /usr/bin; a PROGRAM
# without a slash is looked up in PATH), the shared libraries ldd says they
# need and the dynamic loader, at the paths ldd prints; /bin, /lib, /lib64 and
# /sbin as the host has them (merged /usr: symlinks); /etc/environment with
# PATH=/usr/local/bin:/usr/bin:/bin and the --env variables (NAME="VALUE");
# empty /proc /dev /sys /run and /tmp (1777) mount points. Nothing else: no
# shell unless one is asked for, no ix-stepd, no libyaml.
# DEST must not exist or be an empty directory. Exit 0 on success, 1 on
# error, 2 on usage error.
set -euo pipefail
PROG=${0##*/}
die() { echo "$PROG: $*" >&2; exit 1; }
usage() { echo "usage: $PROG [--env NAME=VALUE]... DEST PROGRAM..." >&2; exit 2; }

envs=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --env) [[ $# -ge 2 ]] || usage; envs+=("$2"); shift 2 ;;
    --env=*) envs+=("${1#--env=}"); shift ;;
    -h|--help) usage ;;
    *) break ;;
  esac
done
[[ $# -ge 2 ]] || usage
dest=$1; shift
for e in "${envs[@]}"; do
  [[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*= && $e != *'"'* && $e != *$'\n'* ]] || die "--env '$e': expected NAME=VALUE without quotes or newlines"
done
if [[ -e $dest ]]; then
  [[ -d $dest && -z $(ls -A "$dest") ]] || die "$dest exists and is not an empty directory"
fi
command -v ldd >/dev/null || die "ldd not found"
mkdir -p "$dest"
dest=$(cd "$dest" && pwd -P)

# The host's top-level layout: merged-/usr symlinks where the host has them.
for d in bin sbin lib lib64; do
  if [[ -L /$d ]]; then
    target=$(readlink "/$d")
    [[ $target != /* && $target != *..* ]] || die "/$d -> $target: only relative links into / are handled"
    mkdir -p "$dest/$target"
    ln -s "$target" "$dest/$d"
  elif [[ -d /$d ]]; then
    mkdir -p "$dest/$d"
  fi
done
mkdir -p "$dest/usr/bin" "$dest/usr/local/bin" "$dest/etc" "$dest/proc" "$dest/dev" "$dest/sys" "$dest/run" "$dest/tmp"
chmod 1777 "$dest/tmp"

# copy_at PATH: the file PATH (symlinks resolved) at the same path in DEST.
copy_at() {
  local path=$1
  [[ -e $dest$path ]] && return 0
  mkdir -p "$dest$(dirname "$path")"
  cp -L --preserve=mode "$path" "$dest$path"
}

declare -A libs=()
for p in "$@"; do
  if [[ $p != */* ]]; then
    p=$(type -P -- "$p") || die "program '$p' not found in PATH"
  fi
  [[ -f $p && -x $p ]] || die "$p is not an executable file"
  cp -L --preserve=mode "$p" "$dest/usr/bin/${p##*/}"
  # ldd lines: "libx.so.1 => /path (0x...)", "/lib64/ld-linux-x86-64.so.2 (0x...)",
  # "linux-vdso.so.1 (0x...)", "not a dynamic executable", "libx => not found".
  out=$(ldd "$p" 2>&1) || { [[ $out == *"not a dynamic executable"* ]] && continue; die "ldd $p: $out"; }
  ! grep -q 'not found' <<<"$out" || die "ldd $p: missing libraries: $(grep 'not found' <<<"$out" | tr -s ' \t' ' ')"
  while read -r lib; do
    libs[$lib]=1
  done < <(sed -nE 's@^\s*(\S+ => )?(/\S+) \(0x[0-9a-f]+\)$@\2@p' <<<"$out")
done
for lib in "${!libs[@]}"; do copy_at "$lib"; done

{
  echo "PATH=/usr/local/bin:/usr/bin:/bin"
  for e in "${envs[@]}"; do echo "${e%%=*}=\"${e#*=}\""; done
} >"$dest/etc/environment"
