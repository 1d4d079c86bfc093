// Power for an agentic-coding result: InferenceX's
// utils/agentic/aggregation/power_adapter.py. The benchmark window is
// AIPerf's profiling lifecycle (profile_export_aiperf.json start_time and
// end_time; naive ISO times are in the launch host's UTC offset, which the
// task records in agentic_power_timezone_offset.txt) and the counts are the
// kept records' (completed requests, input and output tokens). The window
// is written to agentic_power_window.json; aggregate_power.py's run()
// (power_aggregate.h) integrates gpu_metrics.csv over it, patches the
// result and writes power_validation.json. When no window can be built,
// the result gets power_valid 0 and power_validation.json says why.
#pragma once

#include <rapidjson/document.h>

#include <optional>
#include <string>
#include <vector>

namespace ix {

// The window build_power_window makes, or why it could not.
// Invariant: exactly one of `window` (an object: benchmark_start_time_unix,
// benchmark_end_time_unix, duration, completed, total_input_tokens,
// total_output_tokens) and a non-empty `reasons` is set.
struct AgenticPowerWindow {
  std::optional<rapidjson::Document> window;
  std::vector<std::string> reasons;
};

// build_power_window(result_dir).
AgenticPowerWindow BuildAgenticPowerWindow(const std::string& result_dir);

// datetime.fromisoformat(s.strip().replace("Z", "+00:00")) as UTC epoch
// seconds; a naive time is taken in `offset_minutes` east of UTC (nullopt:
// a naive time is refused). nullopt for text fromisoformat refuses.
std::optional<double> ParseIsoTimestamp(const std::string& s, std::optional<int> offset_minutes);

// Whether fromisoformat would read `s` as a naive time.
bool IsNaiveIsoTimestamp(const std::string& s);

// run_agentic_power(result_dir, agg, expected_gpus): patches `agg` (the
// result, in memory), writes agentic_power_window.json and
// power_validation.json in `result_dir`. Returns the reasons power is
// invalid (empty: valid).
std::vector<std::string> ApplyAgenticPower(const std::string& result_dir, rapidjson::Document& agg, int expected_gpus);

}  // namespace ix
