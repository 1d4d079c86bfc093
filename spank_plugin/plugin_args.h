// PluginArgs: the arguments an admin writes after the plugin path in
// plugstack.conf (`required /usr/lib64/slurm/spank_inferencex.so
// recipe_dir=/etc/inferencex/recipes`). Every argument is KEY=VALUE with a
// known key; anything else is an error, never a silent default.
#pragma once

#include <string>
#include <vector>

#include "core/recipe_dir.h"
#include "core/result.h"

namespace ix {

struct PluginArgs {
  std::string recipe_dir = BuiltinRecipeDir();
};

Result<PluginArgs> ParsePluginArgs(const std::vector<std::string>& args);

}  // namespace ix
