// SampleReport: a ReportData like a small real sweep, for the report's unit
// tests and (written out by report_html_test) the browser test. What it
// holds, and so what a report of it counts:
//
// - "dsv41flash-fp4-b300-vllm-1k1k": arms tp4, tep4, dep4 at conc 4, 16,
//   64, 256 (4 GPUs each): all succeed but tep4 256 (failed, no result);
//   dep4 has sessions_per_rank (4 ranks) and dep4 256 no valid power; plus
//   dep4 512 pending. 13 entries, 11 with a result, 10 with energy.
// - kOddKey (a key with & < > " '): arm tp8 at conc 1 and 8 (succeeded,
//   no valid power) and 64 (cancelled). 3 entries, 2 with a result.
// - "qwen3-bf16-h200-vllm-8k1k": dep8 conc 32 failed, tp2 conc 2 running;
//   no result at all.
// - kAgenticKey (agentic-coding entries): tp4 at conc 8, 32; dep4 at 8, 32,
//   64 with 4 DP ranks (sessions and hit rates); dep4 with CPU KV offload
//   at 64 (a CPU hit rate; ranks with hit rates, no sessions); tp4 64
//   failed. 7 entries, 6 with a result, each with 10 turns of TTFT and 12
//   KV usage points. Its charts (agentic_charts.h): throughput (3 series, 6
//   points), TTFT by turn (3, 30), cache hit (4, 7), KV usage (3 charts: 2,
//   3 and 1 series, 72 points), DP sessions (4, 12 bars), DP hit rate (4, 16).
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "submitter/report/report_charts.h"
#include "submitter/report/report_data.h"
#include "submitter/report/svg_chart.h"

namespace ix::test {

// How often `needle` occurs in `text` (not overlapping).
inline size_t CountOf(std::string_view text, std::string_view needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

// Each (needle, count): `text` holds needle that many times.
inline void ExpectCounts(std::string_view text, std::initializer_list<std::pair<std::string_view, size_t>> want) {
  for (const auto& [needle, count] : want) EXPECT_EQ(CountOf(text, needle), count) << needle;
}

// `text` holds every needle (ExpectHas), or none of them (ExpectLacks); a
// failure names the needle.
inline void ExpectHas(std::string_view text, std::initializer_list<std::string_view> needles) {
  for (std::string_view n : needles) EXPECT_NE(text.find(n), std::string_view::npos) << n;
}
inline void ExpectLacks(std::string_view text, std::initializer_list<std::string_view> needles) {
  for (std::string_view n : needles) EXPECT_EQ(text.find(n), std::string_view::npos) << n;
}

// A chart's series names, in order, and its number of points.
inline std::vector<std::string> Names(const XyChart& c) {
  std::vector<std::string> out;
  for (const ChartSeries& s : c.series) out.push_back(s.name);
  return out;
}

inline size_t Points(const XyChart& c) {
  size_t n = 0;
  for (const ChartSeries& s : c.series) n += s.points.size();
  return n;
}

inline constexpr const char* kOddKey = "llama<&>\"q'-fp8";
inline constexpr const char* kAgenticKey = "dsv41flash-fp4-b300-vllm-agentic";

ReportData SampleReport();

// The sample and its config groups (report_charts.h), in the sample's order:
// what the chart tests start from.
struct SampleGroups {
  ReportData data = SampleReport();
  std::vector<ConfigGroup> groups = GroupByConfig(data);
};

}  // namespace ix::test
