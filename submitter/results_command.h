// `ixsubmit results [SWEEP_ID] [--db PATH] [--format inferencex|json|csv]
// [-o FILE]`: a sweep's results. inferencex: the entries' agg results in
// one JSON list, as InferenceX's utils/collect_results.py gathers them
// (the file its dashboards ingest); json: every entry with its state, Slurm
// task, failure and agg result; csv: one row per entry with the main
// numbers. Without SWEEP_ID: the newest sweep.
#pragma once

#include <string>
#include <vector>

namespace ix {

int RunResultsCommand(const std::vector<std::string>& args);

}  // namespace ix
