#!/usr/bin/env bash
# Installs every build and test dependency of inferencex-slurm from Debian
# packages, by name. Idempotent: packages already present are skipped, and
# apt is not touched at all when nothing is missing. Quiet on success; on
# failure the apt log is printed.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  libslurm-dev slurm-wlm slurm-client munge libmunge-dev
  libhwloc-dev hwloc
  libyaml-dev rapidjson-dev libboost-dev libboost-program-options-dev
  libcurl4-openssl-dev libssl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libsqlite3-dev sqlite3 libcpp-httplib-dev prometheus
  python3 curl jq procps iproute2 util-linux
  clang libclang-rt-dev
  rpm rpmlint groff-base gpg gpg-agent gpgconf
  chromium chromium-driver fonts-dejavu-core
)

if [[ $(id -u) -ne 0 ]]; then
  echo "bootstrap.sh: must run as root (it installs Debian packages)" >&2
  exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

log=$(mktemp /tmp/ix-bootstrap.XXXXXX.log)
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  echo "bootstrap.sh: installing ${missing[*]} failed; apt output:" >&2
  tail -n 40 "$log" >&2
  exit 1
fi
# Debian starts munge and slurm daemons on install; the project runs its own
# private instances (and needs only promtool of Prometheus), so the
# distribution's services are stopped and disabled.
for svc in slurmctld slurmd munge prometheus; do
  if command -v systemctl >/dev/null 2>&1 && systemctl list-unit-files "$svc.service" >/dev/null 2>&1; then
    systemctl disable --now "$svc" >/dev/null 2>&1 || true
  fi
done
rm -f "$log"
