// The environment contract: the variables InferenceX's workflow
// (benchmark-tmpl.yml) gives the benchmark client and utils/process_result.py
// reads, made from a sweep entry's matrix entry, so a client in a sweep step
// sees what it would see in InferenceX's CI and the results are named and
// computed the same way. The task passes them to the step and writes them
// to benchmark.env in the entry's result directory.
//
// Invariants: names are unique and in a fixed order; every value is the
// workflow's text for it (booleans "true"/"false", numbers in decimal);
// RESULT_FILENAME is InferenceX's name for the run (the file the client
// writes and process_result.py reads, without .json). For a single-node
// entry (benchmark-tmpl.yml):
//   EXP_PRECISION_FRAMEWORK_tpT-ppP-dcpD-pcpC-epE-dpaA_disagg-G_spec-S_concN_RUNNER
//   (+ _recipe-FINGERPRINT16 when the row has a recipe fingerprint), where
//   RUNNER is the runner name, here the Slurm node the step ran on.
// For an entry whose step spans nodes (an aggregated multinode row,
// benchmark-multinode-tmpl.yml and its srt-slurm launchers), instead of
// TP..DP_ATTENTION and GPU_COUNT: PREFILL_*/DECODE_* (NUM_WORKERS, TP,
// PP_SIZE, DCP_SIZE, PCP_SIZE, EP, DP_ATTN) from the row's prefill/decode
// blocks, PREFILL_GPUS (every GPU of the step), DECODE_GPUS 0,
// PREFILL_/DECODE_HARDWARE, CONC the task's one concurrency, and
//   EXP_PRECISION_FRAMEWORK_prefill-tpT-ppP-dcpD-pcpC-epE-dpA-nwN_decode-(same)
//   _disagg-G_spec-S_concLIST_RUNNER[_recipe-FP16]_sa-bench_isl_I_osl_O_concN_gpus_G
//   (LIST the row's concurrencies joined by "x"; agentic rows: ..._concN).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/base/result.h"
#include "submitter/sweep/sweep_plan.h"

namespace ix {

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// What the sweep adds to an entry's contract: where its results go
// (RESULT_DIR and AGENTIC_OUTPUT_DIR of an agentic entry; "" leaves them
// out) and a DURATION for agentic entries instead of the matrix entry's (0:
// the entry's; a smoke run's short replay).
struct ContractOptions {
  std::string result_dir;
  int64_t duration = 0;
};

// The contract for `e` run on runner `runner_name` (a node name; for a
// step across nodes, the head's). An agentic-coding entry also gets what
// the agentic workflow and benchmark_lib.sh give AIPerf and
// process_agentic_result.py: KV_OFFLOADING, KV_OFFLOAD_BACKEND (the row's
// kv-offload-backend name) and KV_OFFLOAD_BACKEND_METADATA (the object as
// GitHub's toJson writes it), TOTAL_CPU_DRAM_GB, DURATION, the AIPerf
// thresholds and settings at their InferenceX values, RESULT_DIR and
// AGENTIC_OUTPUT_DIR. Errors: an entry without the fields of its kind of
// row (single-node, or multinode with prefill/decode blocks; the message
// names the field), a disaggregated multinode entry.
Result<EnvVars> BenchmarkEnvironment(const PlannedEntry& e, const std::string& runner_name,
                                     const ContractOptions& options = {});

// Whether InferenceX makes an agg result for it (process_result.py runs
// for fixed-seq-len throughput runs only: not eval-only, not agentic).
bool HasAggResult(const EnvVars& env);

// benchmark.env's text: one NAME='value' line per variable, quoted so
// that `. benchmark.env` (any POSIX shell) sets exactly the value, and
// `set -a; . benchmark.env` exports them.
std::string EnvFileText(const EnvVars& env);

// The value of `name` in `env`, or "" when absent.
std::string EnvValue(const EnvVars& env, const std::string& name);

}  // namespace ix
