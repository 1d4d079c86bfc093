// `ixsubmit matrix full-sweep|test-config`: the InferenceX benchmark
// matrix from master-config files, with the reference generator's flags and
// byte-identical output (one JSON line on stdout), plus `--buckets` for the
// grouping the sweep consumes (with `--trim-conc` and `--canary`).
// Options are parsed the way the reference's argparse parser does: repeated
// options take the last value, unambiguous prefixes are accepted.
#pragma once

#include <string>
#include <vector>

namespace ix {

// Runs the subcommand with its arguments (after "matrix"); returns the exit
// status: 0 success, 1 bad config or a selection that cannot be made, 2
// misuse.
int RunMatrixCommand(const std::vector<std::string>& args);

}  // namespace ix
