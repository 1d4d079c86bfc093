// `ixsubmit task`: what one array task (or the canary job) of a sweep runs
// inside its allocation. It finds its entry in sweep.json by
// SLURM_ARRAY_TASK_ID, runs `srun --inferencex-recipe/arm/conc ... CLIENT`
// with IX_RESULT_DIR at the entry's result directory, and writes
// status.json there (running, then succeeded or failed with the step's
// failure.json reason). Under fail-fast a failed task cancels the rest of
// its own array (pending and running, never itself) before it exits, so the
// bucket stops even when the submitter is gone. Exits with srun's status.
#pragma once

#include <string>
#include <vector>

namespace ix {

int RunTaskCommand(const std::vector<std::string>& args);

}  // namespace ix
