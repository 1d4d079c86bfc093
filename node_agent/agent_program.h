// The daemon as a program: the machine behind the loop's hooks (sysfs,
// NVML through dlopen, /metrics on its own server), SIGTERM and SIGINT as
// the stop, and one line a message on stderr (journald keeps them).
#pragma once

#include "node_agent/agent_config.h"

namespace ix {

// Runs ix-node-agent's daemon with `config` until SIGTERM or SIGINT;
// returns the exit status.
int RunAgentProgram(const AgentConfig& config);

}  // namespace ix
