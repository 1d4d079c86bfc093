// What the report reads of an agentic-coding entry's result directory
// (results/N/ of the sweep directory), into ReportEntry (report_data.h):
// - benchmark.env: RESULT_FILENAME (and SCENARIO_TYPE);
// - RESULT_FILENAME.json: InferenceX's agentic aggregate (throughput per
//   GPU, interactivity, TTFT, cache hit rates, KV usage peak, power) with
//   the project's "ix" key (dp_ranks);
// - aiperf_artifacts/profile_export.jsonl: TTFT per turn position over the
//   successful profiling requests (streamed, at most kMaxProfileLines);
// - aiperf_artifacts/server_metrics_export.json: KV cache usage over time,
//   the highest engine per slice (at most kMaxKvUsagePoints points).
//
// Every reader tolerates a missing, partial or malformed file (a failed
// entry): what it cannot read stays empty; nothing throws. Files are read
// up to a size limit, so a sweep directory cannot make the report hold
// more than a few hundred MiB.
#pragma once

#include <cstddef>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "submitter/report/report_data.h"

namespace ix {

inline constexpr size_t kMaxProfileLines = 250000;      // ~a day of conc 256 agentic replay
inline constexpr size_t kMaxProfileLineBytes = 1 << 16;  // a record is ~1 KiB; longer ones are skipped
inline constexpr size_t kMaxKvUsagePoints = 72;          // ~10 units apart on a chart; peaks kept
inline constexpr int64_t kMaxTurnIndex = 256;            // later turns are few; not charted
inline constexpr size_t kMaxAggregateBytes = size_t{16} << 20;
inline constexpr size_t kMaxServerMetricsBytes = size_t{128} << 20;

// The value of NAME in benchmark.env's text (NAME='value' lines, shell
// single quoting with '\'' for a quote; unquoted values as they are); ""
// when absent.
std::string EnvFileValue(std::string_view text, std::string_view name);

// Fills `e` from the agentic aggregate's text: its metrics, power and
// agentic fields, has_result when it has throughput per GPU and
// interactivity. False (e unchanged) when the text is not a JSON object.
bool ReadAgenticAggregate(std::string_view text, ReportEntry& e);

// TTFT per turn_index of the successful (no error) profiling records of
// profile_export.jsonl read from `in`, at most `max_lines` lines; lines
// that are not JSON objects, or longer than kMaxProfileLineBytes, are
// skipped. `*truncated` says whether lines were left unread.
std::vector<TurnTtft> ReadTtftByTurn(std::istream& in, size_t max_lines, bool* truncated);

// KV cache usage over time from server_metrics_export.json's text
// (vllm:kv_cache_usage_perc, or the legacy vllm:gpu_cache_usage_perc, or
// sglang:token_usage): per slice start, the highest `avg` of any series,
// merged into at most `max_points` points (each the highest of its
// slices). `*engines`: how many series had slices.
std::vector<KvUsagePoint> ReadKvUsage(std::string_view text, size_t max_points, int64_t* engines);

// Everything above for the entry whose files are in `result_dir`: marks
// it agentic when benchmark.env says so, then reads what is there.
void ReadAgenticEntry(const std::string& result_dir, ReportEntry& e);

// The file name of the entry's agentic aggregate in `result_dir`
// (RESULT_FILENAME.json from benchmark.env); "" when there is no usable
// RESULT_FILENAME (absent, or not a plain file name).
std::string AgenticAggregateName(const std::string& result_dir);

}  // namespace ix
