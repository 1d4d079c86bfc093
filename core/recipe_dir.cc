#include "submitter/recipe_dir.h"

#include <cstdlib>

namespace ix {

std::string ResolveRecipeDir(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  if (const char* env = std::getenv("IX_RECIPE_DIR"); env && *env) return env;
  return IX_DEFAULT_RECIPE_DIR;
}

}  // namespace ix
