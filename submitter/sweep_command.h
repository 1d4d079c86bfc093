// `ixsubmit sweep MODE ...`: plan, write the sweep directory, submit the
// canary and one throttled array per bucket, watch to the end. This file
// parses the command line and wires the steps; the submitting and watching
// are SweepDriver's (submitter/sweep/sweep_driver.h). State lives in SQLite
// (submitter/sweep/sweep_store.h; `ixsubmit status` shows it):
// `--resume SWEEP_ID` reattaches after the submitter died without
// submitting anything twice. docs/SWEEP.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/base/result.h"
#include "submitter/sweep/sweep_store.h"

namespace ix {

int RunSweepCommand(const std::vector<std::string>& args);

// The sweep database: `db`, else DefaultDbPath; a missing parent directory
// is made private (0700).
Result<SweepStore> OpenSweepStore(const std::optional<std::string>& db);

}  // namespace ix
