// InferenceX's utils/process_result.py, in C++: the agg result made from
// the client's result (benchmark_serving.py's JSON) and the environment
// contract (benchmark_env.h): the run's identity and topology (single-node,
// or with IS_MULTINODE=true its multinode branch: prefill and decode
// workers and GPU counts), throughput per GPU, every *_ms metric again in seconds, and
// interactivity (1000 / TPOT) for every TPOT statistic, with the keys in
// process_result.py's order. The power fields are power_aggregate.h's.
#pragma once

#include <rapidjson/document.h>

#include <functional>
#include <optional>
#include <string>

#include "core/base/result.h"

namespace ix {

// The environment process_result.py reads: the value of a variable, or
// nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// The agg result before power, or an error where process_result.py raises
// (a missing variable, a disaggregated single-node run, multinode sizes
// that are not positive, PREFILL_/DECODE_HARDWARE not both set or both
// unset, a TPOT of 0, a field that is not a number; the message names the
// variable or key, with process_result.py's text where it has one).
Result<rapidjson::Document> ProcessResult(const rapidjson::Value& bench, const EnvLookup& env);

// IS_MULTINODE is "true" (any case): process_result.py's multinode branch.
bool IsMultinode(const EnvLookup& env);

// The GPUs process_result.py counts for single-node power: TP x PP_SIZE x
// PCP_SIZE.
int ExpectedGpus(const EnvLookup& env);

}  // namespace ix
