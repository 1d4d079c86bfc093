#!/usr/bin/env bash
# Fails unless ix-stepd can run in any container image: a static program (no
# interpreter, no shared library), with no YAML parser, hwloc, libcurl or
# name-service code in it, and that starts in an empty root (only itself).
set -euo pipefail
stepd=$1
# Static or static-pie: no shared library needed (ldd succeeds on a
# static-pie program, saying "statically linked", so readelf decides).
if readelf -d "$stepd" | grep -q '(NEEDED)'; then
  echo "$stepd needs shared libraries:"; readelf -d "$stepd" | grep '(NEEDED)'; exit 1
fi
readelf -l "$stepd" | grep -q INTERP && { echo "$stepd has a program interpreter"; exit 1; }
# dlopen is not looked for: glibc 2.43's libc.a brings it in by itself (its
# wide-character conversions can load gconv modules), and a call to it from
# ix-stepd's own code already fails the link (glibc's "Using 'dlopen' in
# statically linked applications" warning, fatal with --fatal-warnings).
for sym in yaml_parser_initialize hwloc_topology_init curl_easy_init getaddrinfo getpwnam; do
  if nm "$stepd" 2>/dev/null | grep -qw "$sym"; then echo "$stepd links $sym"; exit 1; fi
done
# An empty root with nothing but ix-stepd (needs root for chroot).
if [[ $(id -u) -eq 0 ]]; then
  root=$(mktemp -d /tmp/ix-stepd-static.XXXXXX); trap 'rm -rf "$root"' EXIT
  cp "$stepd" "$root/ix-stepd"
  out=$(chroot "$root" /ix-stepd --help)
  grep -q "Usage: ix-stepd" <<<"$out" || { echo "ix-stepd --help in an empty root: $out"; exit 1; }
fi
echo "ix-stepd is static and self-contained"
