// The engines' /metrics text (Prometheus text format), parsed for hang
// detection (hang_watch.h) by the node agent and by ix-stepd: pure, no I/O
// (node_agent/engine_metrics.h reads the text over loopback).
//
// EngineReading: what the agent needs from a vLLM engine's /metrics for
// hang detection: requests running, and the counter of generated tokens. vLLM (v0 and v1) exposes both as Prometheus text:
//
//   vllm:num_requests_running{engine="0",model_name="..."} 4.0        gauge
//   vllm:generation_tokens_total{engine="0",model_name="..."} 1.2e+05 counter
//
// one sample per label set (per engine core of a data-parallel server,
// per model); the reading is the sum over them.
//
// The parser reads outside input (a job's server answers) and is made for
// any bytes: it never throws, reads nothing out of bounds, and skips a line
// it cannot parse instead of failing the whole text. Comments (# HELP,
// # TYPE, # EOF, others), blank lines, CR LF line ends, labels with escaped
// quotes and backslashes, timestamps after the value, and the values NaN,
// +Inf, -Inf are understood; a sample that is not a finite number is no
// evidence and is left out of the sum. A family with no finite sample is
// unset, never 0.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ix {

inline constexpr char kVllmRequestsRunning[] = "vllm:num_requests_running";
inline constexpr char kVllmGenerationTokens[] = "vllm:generation_tokens_total";
inline constexpr char kVllmPromptTokens[] = "vllm:prompt_tokens_total";
// The label that tells a data-parallel server's engine cores (DP ranks)
// apart: engine="0", engine="1", ...
inline constexpr char kVllmEngineLabel[] = "engine";

// One engine's reading (or a step's, summed). Invariant: when `error` is
// set (the engine could not be read), both readings are unset.
struct EngineReading {
  std::optional<double> requests_running;   // sum of vllm:num_requests_running
  std::optional<double> generation_tokens;  // sum of vllm:generation_tokens_total
  std::string error;                        // why no reading: "" when the engine answered
};

// The reading in a /metrics text. Pure; any bytes.
EngineReading ParseEngineMetrics(std::string_view text);

// The sum of the finite samples named exactly `metric_name` (any labels),
// unset when there is none. Pure; any bytes.
std::optional<double> SumPrometheusSamples(std::string_view text, std::string_view metric_name);

// The finite samples named exactly `metric_name`, summed per value of the
// label `label_name` (its value unescaped: \\, \" and \n); samples without
// that label go under "" (so does an empty value). A value whose sum is not
// finite (an overflow) is left out, as SumPrometheusSamples leaves its sum
// unset: no evidence. Per rank, because a sum over ranks hides one rank
// that stopped while the others move. Pure; any bytes.
std::map<std::string, double> SumPrometheusSamplesBy(std::string_view text, std::string_view metric_name,
                                                     std::string_view label_name);

// A step's reading from its engines' readings: each field is the sum, or
// unset when any engine's is unset. A partial sum would look like a
// counter that dropped (an engine missing) and rose again (it is back),
// progress that never was, hiding a hang; so one engine not read makes the
// step's reading no evidence. No engines: unset.
EngineReading CombineReadings(const std::vector<EngineReading>& engines);

}  // namespace ix
