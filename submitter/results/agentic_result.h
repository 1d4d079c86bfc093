// The result of an agentic-coding entry, as InferenceX's pipeline makes it
// after the client (AIPerf) ran (benchmarks/benchmark_lib.sh
// run_agentic_replay_and_write_outputs): `python -m
// utils.agentic.aggregation.process_agentic_result` writes
// $AGENTIC_OUTPUT_DIR/$RESULT_FILENAME.json from $RESULT_DIR/aiperf_artifacts
// and the environment contract (build_agg: identity, topology, request
// accounting, request_metrics, server_metrics; every float rounded to 5
// decimals, integral ones >= 1 as ints; json.dump(indent=2)), power_adapter
// adds the power fields (agentic_power.h), and validate_agentic_result plus
// validate_required_agentic_server_metrics gate it (agentic_validation.h).
// This project appends its own key "ix" last: the sweep entry (as the
// fixed-seq-len agg has it, entry_result.h) and how the data-parallel ranks
// served the run (dp_ranks).
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <vector>

#include "core/base/result.h"
#include "submitter/results/agentic_records.h"
#include "submitter/results/benchmark_env.h"
#include "submitter/results/entry_result.h"
#include "submitter/results/process_result.h"

namespace ix {

// build_agg: the result before rounding and power. `aggregate` is the
// parsed profile_export_aiperf.json ({} when absent), `server_metrics` the
// parsed server_metrics_export.json ({} when absent), `log_paths`
// FindServerLogPaths's. Errors: Python's SystemExit messages for the
// environment ("Missing required environment variable: KV_OFFLOADING",
// "ROUTER_METADATA must contain valid JSON", ...), int()'s ValueError for a
// size that is not an integer, the server metrics adapter's.
Result<rapidjson::Document> BuildAgenticAgg(const AgenticRecords& records, const rapidjson::Value& aggregate,
                                            const rapidjson::Value& server_metrics, const EnvLookup& env,
                                            const std::vector<std::string>& log_paths);

// json.dump(agg, f, indent=2) after round_floats(agg): the file's text (no
// trailing newline).
std::string AgenticResultText(rapidjson::Document& agg);

// The "ix" key of an agentic result: EntryIxFields, then
// prefix_cache_hit_rate (all vLLM series) and dp_ranks: per vLLM `engine`
// label (numeric order) {rank, requests (vllm:request_success; null without
// that metric), prefix_cache_hit_rate (that engine's hits/queries),
// sessions (distinct metadata.x_correlation_id of kept records whose
// metadata.served_by_rank is the rank; null when no record says)}.
rapidjson::Value AgenticIxFields(const std::string& result_dir, const EntryRunInfo& run,
                                 const rapidjson::Value& server_metrics, const AgenticRecords& records,
                                 rapidjson::Document::AllocatorType& a);

// What the task does after an agentic entry's client: aggregate, power,
// validate. Invariant: `failure` is "" when the result is valid, else the
// message of what refused it (the aggregator's, then the validator's,
// REQUIRE_POWER's, the required server metrics'); `result_path` is the
// written file ("" when the aggregator refused and nothing was written).
struct AgenticOutcome {
  std::string result_path;
  std::string failure;
};

// Writes $AGENTIC_OUTPUT_DIR/$RESULT_FILENAME.json from the artifacts in
// $RESULT_DIR (both default to `result_dir`), with power from
// $RESULT_DIR/gpu_metrics.csv unless ENABLE_AGENTX_POWER is off or the run
// is multinode, integrated over `expected_gpus` GPUs. Errors: nothing to
// aggregate (the client wrote no AIPerf artifacts; the message names the
// missing file), RESULT_FILENAME unset, a file that cannot be written.
Result<AgenticOutcome> WriteAgenticResult(const std::string& result_dir, const EnvVars& env, const EntryRunInfo& run,
                                          int expected_gpus);

}  // namespace ix
