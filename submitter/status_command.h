// `ixsubmit status [SWEEP_ID]`: the sweeps in the database (mode, state,
// entry counts, directory), or the entries of one with their state, Slurm
// task, exit code and failure reason.
#pragma once

#include <string>
#include <vector>

namespace ix {

int RunStatusCommand(const std::vector<std::string>& args);

}  // namespace ix
