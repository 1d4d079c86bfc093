// server_metrics of an agentic-coding result: InferenceX's
// utils/agentic/aggregation/server_metrics.py compute_server_metrics over
// AIPerf's server_metrics_export.json ("metrics" only; warmup_metrics is
// ignored), with the vLLM adapter (backends/vllm.py): prefix-cache, by-source,
// external/offload counters, KV usage, per-source rows, and the GPU KV pool
// from the server logs ("GPU KV cache size: N tokens", per EngineCore tag).
// Without metrics: the skeleton, the record token totals and a warning.
// The Dynamo, SGLang and Atom adapters are not ported: a run they would
// handle is refused with an error saying so.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "submitter/results/agentic_records.h"

namespace ix {

// The "metrics" object of a server_metrics_export.json document, or an
// empty object when there is none (index_server_metrics).
const rapidjson::Value& ServerMetricsIndex(const rapidjson::Value& export_doc);

// A series of a metric (an object with "labels", "stats", ...) is counted
// when the filter says so; an empty filter counts every series.
using SeriesFilter = std::function<bool(const rapidjson::Value& series)>;

// sum_stat: the sum over the series of `names` of each series' first
// numeric stat of total, sum, max, avg; nullopt when no series has one.
std::optional<double> SumStat(const rapidjson::Value& metrics, const std::vector<std::string>& names,
                              const SeriesFilter& filter = {});

// label_value: str(series.labels[key]), nullopt when absent.
std::optional<std::string> SeriesLabel(const rapidjson::Value& series, const char* key);

// rate(): a/b when both are known and b > 0.
std::optional<double> MetricRate(std::optional<double> a, std::optional<double> b);

// The server_metrics object. `log_paths`: FindServerLogPaths's. Adds
// Python's warnings to `warnings`. Errors: ValueError's text for metrics no
// adapter knows ("Unsupported agentic server metrics backend; ..."), or an
// adapter that is not ported.
Result<rapidjson::Value> AgenticServerMetrics(const rapidjson::Value& export_doc, const std::string& framework,
                                              const AgenticRecords& records, const std::vector<std::string>& log_paths,
                                              std::vector<std::string>& warnings,
                                              rapidjson::Document::AllocatorType& a);

// find_server_log_paths: RESULT_DIR/server.log, then watchtower-*.out in
// RESULT_DIR and its first three parents (each directory's sorted), each
// file once.
std::vector<std::string> FindServerLogPaths(const std::string& result_dir);

// VllmBackend.kv_cache_pool_tokens_from_server_log: the last size logged
// per EngineCore[_DPn] tag, summed; else the sum of untagged sizes; nullopt
// when the log has none.
std::optional<int64_t> VllmKvCapacityFromLog(std::string_view log);

}  // namespace ix
