// CheckArm: the checks of one arm that need the whole recipe read first,
// run by the recipe loader: every ${NAME} a template the arm renders uses
// has a value where it is rendered (DP_RANK only per rank, GPU_NUMA and
// GPU_CPUS only per GPU), names are declared once, every fragment spliced
// exists and every fragment is spliced, a `when` names a recipe variable,
// a router arm has a router, and arm variables do not refer to each other
// in a cycle; the same for each KV offload tier's templates, with the
// tier builtins, its variables and its ports added to the arm's names. A failure throws YamlError (core/yaml/yaml_reader.h) naming
// where the template or arm was written.
#pragma once

#include "core/recipe/recipe.h"

namespace ix {

void CheckArm(const Recipe& recipe, const Arm& arm);

}  // namespace ix
