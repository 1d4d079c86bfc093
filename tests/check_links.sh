#!/usr/bin/env bash
# check_links.sh PLUGIN STEPD: what the plugin and ix-stepd load (ldd).
# slurmstepd loads the plugin into every step: no SQLite or libcurl (they
# are the submitter's and the tests'). ix-stepd runs in any container
# image: no YAML, hwloc, libcurl or SQLite (static builds load nothing).
set -euo pipefail
plugin=$1 stepd=$2
status=0
# refuse FILE PATTERN WHAT: FILE must not load a library matching PATTERN.
refuse() {
  local found
  found=$(ldd "$1" 2>/dev/null | grep -E "$2" || true)
  if [[ -n $found ]]; then
    echo "FAIL: $(basename "$1") loads $3:"$'\n'"$found"
    status=1
  fi
}
refuse "$plugin" 'libsqlite3|libcurl' "SQLite or libcurl"
refuse "$stepd" 'libsqlite3|libcurl|libhwloc|libyaml' "SQLite, libcurl, hwloc or libyaml"
if [[ $status -eq 0 ]]; then
  echo "ok: $(basename "$plugin") and $(basename "$stepd") load none of the libraries they must not"
  ldd "$plugin" | sed 's/^/  plugin: /'
fi
exit $status
