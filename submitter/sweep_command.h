// `ixsubmit sweep MODE ...` (plan, write the sweep directory, submit the
// canary and one throttled array per bucket, watch to the end) and
// `ixsubmit status [SWEEP_ID]`. State lives in SQLite (core/sweep_store):
// `--resume SWEEP_ID` reattaches after the submitter died without
// submitting anything twice. docs/SWEEP.md.
#pragma once

#include <string>
#include <vector>

namespace ix {

int RunSweepCommand(const std::vector<std::string>& args);
int RunStatusCommand(const std::vector<std::string>& args);

}  // namespace ix
