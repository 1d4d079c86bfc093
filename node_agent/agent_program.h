// The daemon as a program: the machine behind the loop's hooks (sysfs,
// NVML through dlopen, /metrics on its own server), SIGTERM and SIGINT as
// the stop, and one line a message on stderr (journald keeps them).
#pragma once

#include <string>
#include <vector>

#include "node_agent/agent_config.h"

namespace ix {

// Runs ix-node-agent's daemon with `config` until SIGTERM or SIGINT;
// returns the exit status.
int RunAgentProgram(const AgentConfig& config);

// What --check finds wrong with the files `config` names, beyond their
// names: the token file as the daemon would read it (root's, private, one
// printable token) and the CA file (a readable regular file). Empty when
// the daemon would start with them.
std::vector<std::string> CheckAgentFiles(const AgentConfig& config);

}  // namespace ix
