#!/usr/bin/env bash
# slurm-version.sh [INCLUDE_DIR]: the version of the Slurm whose header is
# installed (INCLUDE_DIR/slurm/slurm_version.h, default /usr/include), as
# rpm writes it: SLURM_VERSION_NUMBER 0x160508 -> 22.05.8. The one place
# scripts/build-rpm.sh and rpm_test.sh read it from.
set -euo pipefail
header=${1:-/usr/include}/slurm/slurm_version.h
number=$(awk '$1 == "#define" && $2 == "SLURM_VERSION_NUMBER" { print $3 }' "$header" 2>/dev/null) || {
  echo "slurm-version.sh: cannot read $header (Debian: libslurm-dev; EL: slurm-devel)" >&2; exit 1; }
[[ $number =~ ^0x[0-9a-fA-F]+$ ]] || { echo "slurm-version.sh: $header: no SLURM_VERSION_NUMBER" >&2; exit 1; }
printf '%d.%02d.%d\n' $((number >> 16 & 255)) $((number >> 8 & 255)) $((number & 255))
