#include "core/recipe/recipe_dir.h"

#include <cstdlib>

namespace ix {

std::string BuiltinRecipeDir() { return IX_DEFAULT_RECIPE_DIR; }

std::string ResolveRecipeDir(const std::string& explicit_dir) {
  if (!explicit_dir.empty()) return explicit_dir;
  if (const char* env = std::getenv("IX_RECIPE_DIR"); env && *env) return env;
  return BuiltinRecipeDir();
}

}  // namespace ix
