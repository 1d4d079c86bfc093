// Loading the `hang:` section of a recipe (schema in docs/RECIPES.md): the
// default hang_after and what progress is for the engine and the router.
// Internal to the recipe loader (recipe.cc): throws YamlError naming file,
// line, column and field, which the loader's public boundary turns into an
// ix::Error.
#pragma once

#include <cstdint>

#include "core/recipe/recipe.h"
#include "core/yaml/yaml_reader.h"

namespace ix {

// The policy of mapping `map` (field "hang"). Needs recipe.engine and
// recipe.router loaded: a `metrics:` path is read on the origin of the
// server's HTTP readiness URL, and a router entry needs a router.
HangPolicy LoadHang(const YamlReader& r, uint32_t map, const Recipe& recipe);

// Prometheus names: metrics [a-zA-Z_:][a-zA-Z0-9_:]*, labels [a-zA-Z_][a-zA-Z0-9_]*.
bool IsPrometheusMetricName(const std::string& s);
bool IsPrometheusLabelName(const std::string& s);

}  // namespace ix
