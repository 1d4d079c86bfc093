// Loading the `kv_offload:` tiers of a recipe (schema in docs/RECIPES.md),
// and the readiness list shared with the engine and router. Internal to the
// recipe loader (recipe.cc): both throw YamlError (core/yaml/yaml_reader.h)
// naming file, line, column and field, which the loader's public boundary
// turns into an ix::Error.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/recipe/recipe.h"
#include "core/yaml/yaml_reader.h"

namespace ix {

// A field's name in errors: "arms.tp2", "kv_offload.tiers[0]" (a field of
// the top level is its key alone).
inline std::string Child(const std::string& field, const std::string& key) {
  return field.empty() ? key : field + "." + key;
}
inline std::string Index(const std::string& field, size_t i) { return field + "[" + std::to_string(i) + "]"; }

// The tiers of mapping `map` (field "kv_offload") into recipe.kv_offload.
// Needs recipe.variables loaded (a `when:` may name one).
void LoadKvOffloadTiers(const YamlReader& r, uint32_t map, Recipe& recipe);

// The template written at `node`, with where it was written.
LocatedTemplate LoadTemplate(const YamlReader& r, uint32_t node, const std::string& field);

// Calls fn(name, key, value) for each entry of map `map` at `field`, in
// written order, after checking that no earlier key has the same text
// (`8000` and "8000" are two YAML keys but one name here). The recipe's
// maps and the tiers' maps are read through this one loop.
template <class Fn>
void ForEachYamlEntry(const YamlReader& r, uint32_t map, const std::string& field, Fn&& fn) {
  r.RequireMap(map, field);
  std::set<std::string> seen;
  const std::vector<uint32_t>& items = r.node(map).items;
  for (size_t k = 0; k + 1 < items.size(); k += 2) {
    const std::string name = r.String(items[k], field);
    if (!seen.insert(name).second) r.Fail(items[k], Child(field, name), "given twice");
    fn(name, items[k], items[k + 1]);
  }
}

// Calls fn(i, item, item_field) for each item of sequence `list` at
// `field`, in written order, item_field naming it ("host_memory[2]"). The
// recipe's lists and the tiers' lists are read through this one loop.
template <class Fn>
void ForEachYamlItem(const YamlReader& r, uint32_t list, const std::string& field, Fn&& fn) {
  r.RequireSequence(list, field);
  for (size_t i = 0; i < r.Size(list); ++i) fn(i, r.Item(list, i), Index(field, i));
}

// The `per:` of a host_memory item `node` at `field` (the recipe's and the
// tiers' items both have one): dp_rank, gpu or step.
HostMemoryNeed::Per LoadHostMemoryPer(const YamlReader& r, uint32_t node, const std::string& field);

// Readiness checks: each {http_ok: URL}, {models_nonempty: URL} or
// {tcp_listening: HOST:PORT}.
std::vector<ReadinessTemplate> LoadReadinessList(const YamlReader& r, uint32_t list, const std::string& field);

}  // namespace ix
