// Rendering the recipe's hang policy into a LaunchPlan (internal to
// launch_plan.cc): which processes of the plan are watched, at which
// metrics URL, after how long. Templates were checked at recipe load.
#pragma once

#include <string>

#include "core/base/result.h"
#include "core/recipe/launch_plan.h"
#include "core/recipe/launch_plan_kv_offload.h"
#include "core/recipe/recipe.h"

namespace ix {

// Sets plan.hang from recipe.hang and request.hang_after_s (see
// RenderRequest), once every process is in the plan: a check per engine
// process and one for the router, each where the recipe defines progress
// for it. An engine read on its API origin is skipped on a node whose
// engine has no HTTP readiness URL (after the head: no API). `lookup` gives
// the arm's names; `what` names the recipe and arm in errors.
Status ApplyHang(const Recipe& recipe, const RenderRequest& request, const Lookup& lookup, const std::string& what,
                 LaunchPlan& plan);

// "http://localhost:8000/health" -> "http://localhost:8000"; "" if `url`
// has no scheme://.
std::string UrlOrigin(const std::string& url);

}  // namespace ix
