// StepDirs: the record that ties a step's directory in run_dir to the
// slurmstepd that made it, so a directory whose slurmstepd died without
// its `exit` hook (SIGKILL, a node crash under a persistent run_dir) is
// removed by a later step instead of filling /run. The record is root's:
// `run_dir/.JOB.STEP.owner` beside the directory, in run_dir itself, which
// the job user cannot write (the step's own directory is the user's, so
// nothing in it is trusted for this). Removed at the step's end with the
// directory; a directory the backstop kept for the admin loses its record
// and so is never removed automatically.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/node/ports.h"
#include "core/base/result.h"

namespace ix {

// ".JOB.STEP.owner"
std::string StepOwnerFile(const std::string& step_id);

// "PID START_TIME BOOT_ID\n" of `owner`, and back (nullopt when malformed).
std::string FormatStepOwner(const LeaseOwner& owner);
std::optional<LeaseOwner> ParseStepOwner(const std::string& step_id, const std::string& text);

// Removes every step directory of `run_base` (a descriptor of run_dir, named
// `run_dir` in messages) whose record names a slurmstepd that is gone, and
// the record. Returns the step ids removed; an error only when run_dir
// cannot be read. A directory that cannot be removed is said in `problems`.
Result<std::vector<std::string>> RemoveStaleStepDirs(int run_base, const std::string& run_dir, OwnerLiveness& live,
                                                     std::vector<std::string>* problems);

}  // namespace ix
