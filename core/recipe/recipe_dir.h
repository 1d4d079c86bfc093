// Where recipes are looked up: an explicit directory (a --recipe-dir flag,
// a plugstack.conf recipe_dir=), else $IX_RECIPE_DIR, else the directory
// fixed at build time (-DIX_RECIPE_DIR: this checkout's recipes/ for a
// developer build, /usr/share/inferencex/recipes for a package).
#pragma once

#include <string>

namespace ix {

// The directory fixed at build time.
std::string BuiltinRecipeDir();
// `explicit_dir` if non-empty, else $IX_RECIPE_DIR if set, else BuiltinRecipeDir().
std::string ResolveRecipeDir(const std::string& explicit_dir);

}  // namespace ix
