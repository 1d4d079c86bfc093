// Loading the `kv_offload:` tiers of a recipe (schema in docs/RECIPES.md),
// and the readiness list shared with the engine and router. Internal to the
// recipe loader (recipe.cc): both throw YamlError (core/yaml/yaml_reader.h)
// naming file, line, column and field, which the loader's public boundary
// turns into an ix::Error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/recipe/recipe.h"
#include "core/yaml/yaml_reader.h"

namespace ix {

// The tiers of mapping `map` (field "kv_offload") into recipe.kv_offload.
// Needs recipe.variables loaded (a `when:` may name one).
void LoadKvOffloadTiers(const YamlReader& r, uint32_t map, Recipe& recipe);

// The template written at `node`, with where it was written.
LocatedTemplate LoadTemplate(const YamlReader& r, uint32_t node, const std::string& field);

// Readiness checks: each {http_ok: URL}, {models_nonempty: URL} or
// {tcp_listening: HOST:PORT}.
std::vector<ReadinessTemplate> LoadReadinessList(const YamlReader& r, uint32_t list, const std::string& field);

}  // namespace ix
