// The records ix-stepd writes for people and tools beside the step:
// failure.json (what failed, where and why) and placement-obtained.json
// (what binding each started process really got). JSON text only; where
// they go is the supervisor's business.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/base/result.h"
#include "core/node/binding.h"

namespace ix {

// failure.json: which process, pid, exit status or signal, why, the last
// lines of its log, and the time; in a step across nodes (node_rank >= 0)
// also the node it happened on and its rank in the step.
std::string FailureJson(const std::string& process, pid_t pid, const std::string& reason,
                        const std::string& log_tail, const std::string& node = "", int64_t node_rank = -1);

// {"engine":{"cpus":"0-15","mempolicy":"bind:0",...},...}: what each
// started process actually got (or why it could not be read).
std::string ObtainedJson(const std::vector<std::pair<std::string, Result<ProcBinding>>>& got);

}  // namespace ix
