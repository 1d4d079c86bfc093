#!/usr/bin/env bash
# Fails when the plugin exports any symbol besides the SPANK entry points, or
# lacks one Slurm needs, or was linked without -z now.
set -euo pipefail
so=$1
exported=$(nm -D --defined-only "$so" | awk '{print $3}' | sort)
unexpected=$(grep -Ev '^(plugin_name|plugin_type|plugin_version|spank_plugin_version|slurm_spank_[a-z_]+)$' <<<"$exported" || true)
if [[ -n $unexpected ]]; then
  echo "unexpected exported symbols in $so:"; echo "$unexpected"; exit 1
fi
for sym in plugin_name plugin_type plugin_version slurm_spank_init slurm_spank_init_post_opt; do
  grep -qx "$sym" <<<"$exported" || { echo "missing exported symbol $sym in $so"; exit 1; }
done
readelf -d "$so" | grep -Eq 'FLAGS.*\bNOW\b|BIND_NOW' || { echo "$so not linked with -z now"; exit 1; }
echo "exports ok: $(tr '\n' ' ' <<<"$exported")"
