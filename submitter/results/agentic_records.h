// The client's per-request records of an agentic-coding run (AIPerf's
// profile_export.jsonl), loaded as InferenceX's
// utils/agentic/aggregation/request_metrics.py load_records_with_accounting
// loads them: every non-blank line counts; a warmup record (a
// benchmark_phase other than "profiling"; none counts as profiling) or an
// errored one (a truthy "error") is dropped and counted, an errored one
// also under its error category; the rest are kept, in file order.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/result.h"

namespace ix {

// The kept records and the accounting of the dropped ones.
// Invariants: kept() + dropped ones == total; a record both warmup and
// errored counts in both drop counters (as in Python), so
// warmup_dropped + error_dropped may exceed total - kept(); categories are
// in first-seen order and their counts sum to error_dropped.
struct AgenticRecords {
  rapidjson::Document kept{rapidjson::kArrayType};  // the kept records (objects), in file order
  int64_t total = 0, warmup_dropped = 0, error_dropped = 0;
  std::vector<std::pair<std::string, int64_t>> error_categories;
  int64_t kept_count() const { return static_cast<int64_t>(kept.Size()); }
};

// _resolve_artifact_dir: RESULT_DIR/aiperf_artifacts when it holds
// profile_export.jsonl, else its first child directory (sorted by name)
// that does, else RESULT_DIR/aiperf_artifacts.
std::string ResolveAgenticArtifactDir(const std::string& result_dir);

// Loads `jsonl_path`. Errors: unreadable file, a line that is not JSON
// (Python raises there too; the message names the line).
Result<AgenticRecords> LoadAgenticRecords(const std::string& jsonl_path);

// The request_accounting object, in Python's key order.
rapidjson::Value RequestAccounting(const AgenticRecords& r, rapidjson::Document::AllocatorType& a);

// The value of a record's metric: metrics[key]["value"] when that entry is
// an object, else the entry itself; nullptr when absent.
const rapidjson::Value* RecordMetric(const rapidjson::Value& record, const char* key);

// metadata[key] of a record, nullptr when absent.
const rapidjson::Value* RecordMetadata(const rapidjson::Value& record, const char* key);

// Python's float(v) / int(v) for a JSON value, nullopt where Python raises
// (to_float / to_int in aggregation_common.py): numbers, bools and numeric
// strings convert; int() truncates a float and refuses "12.5", NaN and inf.
std::optional<double> PyToFloat(const rapidjson::Value* v);
std::optional<int64_t> PyToInt(const rapidjson::Value* v);

// Python truthiness of a JSON value (null, false, 0, "", {} and [] are false).
bool PyTruthy(const rapidjson::Value& v);

// str(v) of a JSON scalar as Python prints it (True, 500, 1.5, the text).
std::string PyStr(const rapidjson::Value& v);

}  // namespace ix
