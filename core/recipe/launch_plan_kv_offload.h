// Rendering a KV offload tier into a LaunchPlan (internal to launch_plan.cc):
// choosing the tier from a RenderRequest, its builtins, and what it adds to
// the plan: engine args and env, files, servers (first in the process
// list), host memory. Templates were checked at recipe load, so a render
// error here is a value problem (a byte count that is not one).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/result.h"
#include "core/recipe/launch_plan.h"
#include "core/recipe/recipe.h"

namespace ix {

using Lookup = std::function<std::optional<std::string>(const std::string&)>;

// The tier `name` names ("" or "none": nullptr), or an error listing the
// tiers the recipe serves.
Result<const KvOffloadTier*> SelectKvOffload(const Recipe& recipe, const std::string& name);

// The tier builtins' values for `arm` (KvOffloadBuiltins in recipe.h), or an
// error when the tier uses the DRAM budget and none (> 0) was given, or
// RESULT_DIR and no result directory was.
Result<std::vector<std::pair<std::string, std::string>>> KvOffloadBuiltinValues(const KvOffloadTier& tier,
                                                                              const Arm& arm,
                                                                              const RenderRequest& request);

// Adds the tier to `plan`, whose processes are so far only its engines:
// `lookup` gives every name but the tier's variables. Its args go at the
// end of each engine's argv, its env into each engine's env (a name already
// there replaced in place), its servers before the engines (role
// kServerRole), its files and host memory (counted like the recipe's) to
// the plan. `what` names the recipe and arm in errors.
Status ApplyKvOffload(const KvOffloadTier& tier, const Lookup& lookup, const std::string& what, LaunchPlan& plan);

// "356000000000", "356GB", "189GiB": a byte count, integer with an
// optional unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB); exact, no rounding.
Result<uint64_t> ParseByteCount(const std::string& text);

}  // namespace ix
