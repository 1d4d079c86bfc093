// The charts of one config key's agentic-coding entries (IsAgentic), as
// chart specs built from their AgenticResult (report_data.h), apart from the
// fixed-seq-len charts (report_charts.h): the workloads differ, so their
// points never share a chart. Arms are named by ArmLabel (the KV offload
// tier included).
//
// What each gives (the browser test's expected counts follow from this):
// - AgenticThroughputChart ("agentic-throughput-interactivity"): as the
//   fixed-seq-len one, over agentic entries with has_result.
// - TurnTtftChart ("agentic-ttft-turn"): p50 TTFT per turn position, a
//   series per arm ("ARM · conc N") from its highest-conc entry with
//   ttft_by_turn, a point per turn; so at most one series per arm.
// - CacheHitChart ("agentic-cache-hit"): prefix-cache hit rate (%) against
//   concurrency: per arm "ARM GPU" (solid) over entries with
//   gpu_cache_hit_rate, and "ARM CPU" (dashed, hollow) when an entry of the
//   arm has cpu_cache_hit_rate (the offload tier); none such: no chart.
// - KvUsageCharts ("agentic-kv-usage"): a chart per arm with kv_usage, a
//   series per entry ("conc N") with a point per KvUsagePoint.
// - DpSessionsChart ("agentic-dp-sessions") and DpHitRateChart
//   ("agentic-dp-hit-rate"): bars per DP rank, a group per entry with two
//   or more dp_ranks, one with a session count (a hit rate); none such: no
//   chart.
//   Equal bars within a group say the router kept sessions spread while
//   keeping each on its rank (affinity: high per-rank hit rates).
#pragma once

#include <optional>
#include <vector>

#include "submitter/report/chart_parts.h"

namespace ix {

XyChart AgenticThroughputChart(const ConfigGroup& group);
XyChart TurnTtftChart(const ConfigGroup& group);
std::optional<XyChart> CacheHitChart(const ConfigGroup& group);
std::vector<XyChart> KvUsageCharts(const ConfigGroup& group);
std::optional<BarChart> DpSessionsChart(const ConfigGroup& group);
std::optional<BarChart> DpHitRateChart(const ConfigGroup& group);

// A rate (0..1) as the report shows it: "83.2%".
std::string FormatPercent(double rate);

}  // namespace ix
