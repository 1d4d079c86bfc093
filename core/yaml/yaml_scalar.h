// YAML 1.1 typing of one scalar node, as PyYAML's Resolver and
// SafeConstructor do it: plain `2_063_837` and `0x1F` are integers,
// `yes`/`off` booleans, `~` null, `2024-01-01` a timestamp, `0.95` a float;
// explicit tags (`!!int '0x10'`, `!!str 3`) construct the tagged type. Used
// by the YamlDoc builder; exposed for tests.
#pragma once

#include <string>
#include <string_view>

#include "core/yaml/yaml_document.h"

namespace ix {

// Types a plain (unquoted, untagged) scalar from its text: sets n.type and
// the value fields (b, i and overflow, or f). Text no rule matches is a
// string.
void ResolvePlainScalar(YNode& n);

// Types a scalar written with tag `tag` ("!" and tag:yaml.org,2002:str,
// int, float, bool, null). False, with `problem` saying why ("invalid
// literal for an integer: 'x'", "unsupported tag '...'"), when the text is
// not of that type or the tag is not supported.
bool ResolveTaggedScalar(std::string_view tag, YNode& n, std::string& problem);

}  // namespace ix
