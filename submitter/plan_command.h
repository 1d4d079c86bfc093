// `ixsubmit plan`: renders a recipe arm at one concurrency into a LaunchPlan
// and prints it (JSON or a summary). Nothing is started.
#pragma once

#include <string>
#include <vector>

namespace ix {

// Runs the subcommand with its arguments (after "plan"); returns the exit
// status: 0 success, 1 bad recipe or plan, 2 misuse.
int RunPlanCommand(const std::vector<std::string>& args);

}  // namespace ix
