// What ix-stepd does for and to the step's processes besides supervising
// them: which GPUs a rank's engine sees, where each engine's /metrics is,
// and ending the client tasks' whole trees on a failure.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/recipe/launch_plan.h"

namespace ix {

// Each engine's /metrics (the vLLM API servers: processes named engine or
// engine-*), from the origin of its first readiness URL, for the agent's
// hang detection: "http://localhost:20001/metrics".
std::vector<std::string> EngineMetricsUrls(const LaunchPlan& plan);

// CUDA_VISIBLE_DEVICES for a process serving `gpus` (step-local indices)
// when the step sees `visible` ("" or unset: the indices themselves).
std::string NarrowVisibleDevices(const std::optional<std::string>& visible, const std::vector<int64_t>& gpus);

// SIGKILL to the client tasks `clients` and everything they started, but
// never to this process or what it started. Said on stderr.
void KillClientTrees(const std::vector<pid_t>& clients);

// The path of program NAME in this process's $PATH (an executable regular
// file), "" when there is none: the job's tools (py-spy) as its image has
// them, found without a shell.
std::string FindProgram(const std::string& name);

}  // namespace ix
