// The client a sweep entry's step runs: the sweep's own, given after "--"
// (it wins, as before), else InferenceX's command for the entry's scenario
// (client_command.h), built from the task's environment, the entry's
// contract and the recipe arm's client variables.
#pragma once

#include <string>
#include <vector>

#include "core/base/result.h"
#include "submitter/results/benchmark_env.h"
#include "submitter/sweep/sweep_files.h"

namespace ix {

// What the step runs and what the task says of it. Invariant: `argv` is
// what srun runs after its own options; `record` is "" for the sweep's
// own client.
struct EntryClient {
  std::vector<std::string> argv;
  std::string description;  // the command as a shell would read it
  std::string record;       // benchmark_command.txt (agentic entries), "" when none
  bool sweeps_own = false;
};

// The client of entry `e` of sweep `m`, whose contract is `contract` and
// results go to `result_dir`; `task_env` is the task's environment
// (NAME=value strings). Errors: the recipe or its arm cannot be rendered,
// or the command cannot be built (a bad WEKA_LOADER_OVERRIDE).
Result<EntryClient> ResolveEntryClient(const SweepManifest& m, const PlannedEntry& e, const EnvVars& contract,
                                       const std::string& result_dir, const std::vector<std::string>& task_env);

}  // namespace ix
