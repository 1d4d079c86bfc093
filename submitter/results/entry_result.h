// An entry's agg result, written by `ixsubmit task` after its step: what
// process_result.py (process_result.h) and aggregate_power.py
// (power_aggregate.h) make of the client's RESULT_FILENAME.json and the
// node agent's gpu_metrics.csv in the entry's result directory, with the
// environment contract (benchmark_env.h); for a multinode entry
// (IS_MULTINODE=true) process_result.py's multinode branch and
// aggregate_power_multinode.py's verdict without a power manifest
// (power_valid 0; gpu_metrics.csv is not read). Written as
// agg_RESULT_FILENAME.json in Python's json format, plus this project's
// fields under the one key "ix" (AGG_IX_KEY): the sweep entry, the Slurm
// job, the placement ix-stepd obtained and, for a data-parallel-attention
// arm (DEP, ranks behind the router), how the client's sessions spread over
// the ranks.
#pragma once

#include <rapidjson/document.h>

#include <string>

#include "core/base/result.h"
#include "submitter/results/benchmark_env.h"

namespace ix {

// Where and how an entry ran, for the "ix" key.
struct EntryRunInfo {
  std::string sweep_id;
  int64_t entry = 0;
  std::string config_key, recipe, arm;
  std::string slurm_job_id, slurm_task, node;
};

// The "ix" fields every result starts with: the sweep entry, the Slurm
// job and node, and the placement ix-stepd recorded in `result_dir`
// (step-placement.json; null when absent).
rapidjson::Value EntryIxFields(const std::string& result_dir, const EntryRunInfo& run,
                               rapidjson::Document::AllocatorType& a);

// Writes agg_RESULT_FILENAME.json in `result_dir` and returns its path.
// Errors (nothing written): no client result, or one process_result.py
// would refuse (the message says why).
Result<std::string> WriteEntryAgg(const std::string& result_dir, const EnvVars& env, const EntryRunInfo& run);

// agg_NAME.json for RESULT_FILENAME NAME.
std::string AggFileName(const std::string& result_filename);

}  // namespace ix
