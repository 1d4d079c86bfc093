// Where recipes are looked up: --recipe-dir, else $IX_RECIPE_DIR, else the
// directory fixed at build time (the source tree's recipes/ for a developer
// build, /usr/share/inferencex/recipes for a package).
#pragma once

#include <string>

namespace ix {

std::string ResolveRecipeDir(const std::string& flag_value);

}  // namespace ix
